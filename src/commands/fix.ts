import {Args} from '@oclif/core'

import {BaseCommand, judged, sourceOptions} from '../cli/base.js'
import {fixFlags} from '../cli/flags.js'
import {appliedCleanly, fixPlanJson} from '../report/fix.js'
import {palette} from '../render/style.js'
import {renderFixPlan} from '../render/text.js'

export default class Fix extends BaseCommand {
  static summary = 'Plan the corrected tunnel routes; --apply programs them through rtnetlink'
  static description = `Dry run by default: per prefix the current route, the planned one, and the \`ip route replace|del\` and \`ip rule\` lines a person could paste.
Corrections live in an overlay table BIRD never learns from (--table), reached by one \`ip rule to POOL lookup TABLE\` per IP-in-IP pool (--rule-priority).
--apply writes them (journal first, read back, watch for a route war, restore on any failure); --revert JOURNAL undoes an apply.
--bird-config prints the durable fix: the BIRD kernel export filter for the pools found (BIRD 2.0.12+, 3.2+).`
  static examples = ['<%= config.bin %> fix --from examples/bird2-ecmp-not-tunneled', '<%= config.bin %> fix --apply --yes',
    '<%= config.bin %> fix --revert /var/lib/routedoctor/journal-20261129-175501.json --yes', '<%= config.bin %> fix --bird-config']
  static args = {prefix: Args.string({description: 'only this prefix', required: false})}
  static flags = fixFlags

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Fix)
    this.jsonOutput = flags.json
    const c = palette()
    // only this command needs them: not at start-up
    const [fix, {confirm}, {applyQuestion, renderApply, renderRevert}] =
      await Promise.all([import('../services/fix.js'), import('../cli/confirm.js'), import('../render/apply.js')])
    if (flags.revert) {
      if (!(await confirm(`Revert the routes journaled in ${flags.revert}?`, flags.yes))) return
      const result = await fix.revertFix(flags.revert)
      if (flags.json) this.printJson({schema: 1, ...result})
      else this.print(renderRevert(result, c))
      process.exitCode = result.verified && result.errors.length === 0 ? 0 : 1
      return
    }
    // --bird-config alone prints the BIRD filter; with --apply it is an apply
    const mode = flags.apply ? 'apply' : flags['bird-config'] ? 'bird-config' : 'dry-run'
    const planned = await fix.loadFixPlan(mode === 'bird-config' ? sourceOptions(flags) : judged(sourceOptions(flags)),
      {prefix: args.prefix, apply: flags.apply, fixProtocol: flags.protocol, table: flags.table, rulePriority: flags['rule-priority']})
    // a full table's plan is hundreds of MB of JSON: written element by element, never as one string
    const done = mode !== 'apply' || planned.report.unavailable !== undefined || planned.changes === 0
    if (!flags.json) this.print(renderFixPlan(planned, mode, c))
    else if (done) await this.streamJson(fixPlanJson(planned, mode))
    if (planned.report.unavailable !== undefined && mode !== 'bird-config') process.exitCode = 1
    if (done || !(await confirm(applyQuestion(planned), flags.yes))) return
    const result = await fix.applyFix(planned.plan, {journalDir: flags['journal-dir'], watchSeconds: flags.watch})
    if (flags.json) await this.streamJson(fix.appliedReport(planned.report, result))
    else this.print(renderApply(result, c))
    process.exitCode = appliedCleanly(result) ? 0 : 1
  }
}
