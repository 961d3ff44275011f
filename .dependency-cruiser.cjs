// Import direction between src/ folders (DESIGN §7): data flows collect -> parse -> model <- ... -> presenters.
// Each folder may import only its own files and the folders before it in LAYERS, so folders cannot form a cycle.
// Run by `npm run lint`.
const LAYERS = [
  'model', // domain types and prefix math: imports nothing of the project
  'parse', // one pure parser per source format
  'collect', // raw sources: the live node, a snapshot directory
  'runtime', // start-up and memory tricks: huge pages, the code cache, forced collections
  'snapshot', // sources -> Snapshot
  'bulk', // the full-table path behind bulk/build.ts: routes deferred as numbers, healthy ones reported in bulk, texts dropped
  'diagnose',
  'plan',
  'netlink',
  'report', // report types and builders
  'fleet', // many nodes' reports joined with Calico's truth
  'render',
  'bundle',
  'services', // one per command: the only place stages are composed
  'ui', // Ink views over the services
  'agent', // watch: incremental diagnosis, metrics, reconcile
  'cli', // oclif base command and prompts
  'commands', // oclif wiring only (src/main.ts, above every folder, lists them)
]

const layerRules = LAYERS.map((layer, i) => ({
  name: `${layer}-imports-only-earlier-layers`,
  comment: `src/${layer}/ may import ${i === 0 ? 'nothing of the project' : LAYERS.slice(0, i).join(', ')}`,
  severity: 'error',
  from: {path: `^src/${layer}/`},
  to: {path: `^src/(?!(?:${LAYERS.slice(0, i + 1).join('|')})/)`},
}))

// What a command may import at run time (DESIGN §7: parse flags, call one service, render): the CLI, the services and
// the presenters. `ui` and `watch` run a front end for as long as the user keeps it: its entry is their service.
const COMMAND_IMPORTS = ['^src/(cli|services|render)/', '^src/ui/(actions|import-ink)\\.tsx?$', '^src/agent/run\\.ts$']

const commandRule = (name, from) => ({
  name,
  comment: 'src/commands/ is wiring: it imports cli/, services/, render/ (types of anything), never builds or loads itself',
  severity: 'error',
  from: {path: from},
  to: {path: '^src/', pathNot: COMMAND_IMPORTS, dependencyTypesNot: ['type-only']},
})

module.exports = {
  forbidden: [
    ...layerRules,
    commandRule('commands-only-wiring', '^src/commands/'),
    {
      name: 'no-circular',
      comment: 'no import cycles at run time, not even inside a folder (type-only cycles inside a folder are harmless)',
      severity: 'error',
      from: {path: '^src/'},
      to: {circular: true, viaOnly: {dependencyTypesNot: ['type-only']}},
    },
    {
      name: 'src-not-from-tests',
      severity: 'error',
      from: {path: '^src/'},
      to: {path: '^(test|bench|scripts)/'},
    },
  ],
  options: {
    doNotFollow: {path: 'node_modules'},
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: {fileName: 'tsconfig.json'},
    enhancedResolveOptions: {exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default']},
  },
}
