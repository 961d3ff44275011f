// The CLI's entry: bin/run.js imports the bundle of this file (dist/app/cli.js, built by
// scripts/bundle.mjs), whose start-up chunk holds oclif and every command, so start-up reads a few
// files (that chunk comes through V8's code cache: src/runtime/code-cache.ts) instead of resolving and
// compiling each CommonJS module one by one. oclif finds the commands
// through the "explicit" discovery strategy (package.json oclif.commands → COMMANDS below); what
// only some commands need (Ink and React, the netlink binding, live collection, fix and bundle
// services) is behind dynamic import() in those commands and stays out of the start-up chunk.
import {execute, settings} from '@oclif/core'

import Bundle from './commands/bundle.js'
import Check from './commands/check.js'
import Explain from './commands/explain.js'
import Fix from './commands/fix.js'
import Fleet from './commands/fleet.js'
import Ui from './commands/ui.js'
import Watch from './commands/watch.js'

export const COMMANDS = {bundle: Bundle, check: Check, explain: Explain, fix: Fix, fleet: Fleet, ui: Ui, watch: Watch}

/** Run the CLI; `dir` is bin/run.js's import.meta.url (oclif finds package.json from it). */
export async function run(dir: string): Promise<void> {
  // The commands are compiled into the bundle: never let oclif look for their TypeScript sources
  // (by default it registers tsx and maps dist/ to src/ when NODE_ENV is test or development).
  settings.enableAutoTranspile = false
  // A bare `routedoctor` on a terminal starts the interactive UI (DESIGN §2).
  if (process.argv.length === 2 && process.stdout.isTTY && process.stdin.isTTY) process.argv.push('ui')
  const first = process.argv[2]
  // flags without a command (`routedoctor --from BUNDLE`): the UI on a terminal, else check's report
  if (first !== undefined && first.startsWith('-') && !TOP_LEVEL_FLAGS.has(first)) {
    process.argv.splice(2, 0, process.stdout.isTTY && process.stdin.isTTY ? 'ui' : 'check')
  } else if (first !== undefined && !first.startsWith('-') && !(first in COMMANDS) && first !== 'help') {
    process.stderr.write(`routedoctor: ${unknownCommand(first)}\n`)
    process.exitCode = 2
    return
  }
  // `routedoctor help [COMMAND]` is `routedoctor [COMMAND] --help`
  if (first === 'help')
    process.argv.splice(2, process.argv.length - 2, ...(process.argv[3] ? [process.argv[3], '--help'] : ['--help']))
  await execute({dir})
}

// what oclif itself answers without a command
const TOP_LEVEL_FLAGS = new Set(['--help', '-h', '--version', '-v'])

/** The message for a command routedoctor does not have, with the nearest one it has. */
export function unknownCommand(name: string): string {
  const names = Object.keys(COMMANDS)
  const near = names.map((n) => [n, editDistance(name.toLowerCase(), n)] as const).sort((a, b) => a[1] - b[1])[0]
  const hint = near[1] <= Math.max(2, Math.floor(near[0].length / 2)) ? ` Did you mean \`routedoctor ${near[0]}\`?` : ''
  return `unknown command \`${name}\`.${hint} Commands: ${names.join(', ')}; \`routedoctor --help\` lists them.`
}

function editDistance(a: string, b: string): number {
  let row = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const next = [i]
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1))
    row = next
  }
  return row[b.length]
}
