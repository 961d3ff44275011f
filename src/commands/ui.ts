import {BaseCommand, judged, sourceOptions} from '../cli/base.js'
import {parseSeconds, uiFlags} from '../cli/flags.js'
import {palette} from '../render/style.js'
import {loadCheckRun} from '../services/check.js'
import {importInteractiveUi} from '../ui/import-ink.js'

export default class Ui extends BaseCommand {
  static summary =
    'The interactive TUI: prefixes with their verdicts, the explanation of the selected one, fix preview and apply, bundle, live refresh'
  static description =
    'Keys: ↑↓/jk move, / filter, Enter explain, f fix preview, a apply (asks y/n), b bundle, h host findings, r refresh, ? help, q quit. ' +
    'Live (without --from) it refreshes every --interval seconds and marks verdicts that changed. ' +
    'Without a terminal (or with --json) it prints what `check` prints, with the same exit status, and says why on stderr. ' +
    'A bare `routedoctor` on a terminal starts it.'
  static examples = ['<%= config.bin %> ui', '<%= config.bin %> ui --from examples/bird2-ecmp-not-tunneled']
  static flags = uiFlags

  async run(): Promise<void> {
    const {flags} = await this.parse(Ui)
    this.jsonOutput = flags.json
    const refreshMs = parseSeconds('interval', flags.interval, 3600) * 1000
    const truthIntervalSeconds = parseSeconds('truth-interval', flags['truth-interval'], 86400)
    const why = flags.json ? '--json was given' : !process.stdout.isTTY ? 'stdout is not a terminal' : !process.stdin.isTTY ? 'stdin is not a terminal' : undefined
    if (why) {
      process.stderr.write(`routedoctor ui: ${why}; printing the check report instead of starting the interactive UI\n`)
      process.exitCode = await this.writeCheck(await loadCheckRun(judged(sourceOptions(flags)), flags.json), flags.json)
      return
    }
    const c = palette()
    const {createActions, firstReport} = await import('../ui/actions.js') // only this command needs it: not at start-up
    const options = {palette: c, toolVersion: this.config.version, truthIntervalSeconds}
    const actions = createActions(sourceOptions(flags), options)
    const first = await firstReport(actions)
    const runUi = await importInteractiveUi()
    await runUi({actions, ...first, live: !flags.from, source: flags.from ?? 'live', refreshMs, colorLevel: c.level})
    process.exitCode = 0
  }
}
