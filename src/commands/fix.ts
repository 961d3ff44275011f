import {Args, Flags} from '@oclif/core'

import {BaseCommand, judged, sourceFlags, sourceOptions} from '../cli/base.js'
import {Context, DEFAULT_FIX_PROTOCOL_NUMBER, DEFAULT_OVERLAY_TABLE, DEFAULT_RULE_PRIORITY} from '../model/context.js'
import {UsageError} from '../model/errors.js'
import {loadSettledSnapshot} from '../services/load.js'
import {palette} from '../render/style.js'
import {renderBirdConfig, renderFix} from '../render/text.js'

export default class Fix extends BaseCommand {
  static summary = 'Plan the corrected tunnel routes; --apply programs them through rtnetlink'
  static description = `Dry run by default: per prefix the current route, the planned one, and the \`ip route replace|del\` and \`ip rule\` lines a person could paste.
Corrections live in an overlay table BIRD never learns from (--table), reached by one \`ip rule to POOL lookup TABLE\` per IP-in-IP pool (--rule-priority).
--apply writes them (journal first, read back, watch for a route war, restore on any failure); --revert JOURNAL undoes an apply.
--bird-config prints the durable fix: the BIRD kernel export filter for the pools found (BIRD 2.0.12+, 3.2+).`
  static examples = [
    '<%= config.bin %> fix --from examples/bird2-ecmp-not-tunneled',
    '<%= config.bin %> fix --apply --yes',
    '<%= config.bin %> fix --revert /var/lib/routedoctor/journal-20261129-175501.json --yes',
    '<%= config.bin %> fix --bird-config',
  ]
  static args = {prefix: Args.string({description: 'only this prefix', required: false})}
  static flags = {
    ...sourceFlags,
    apply: Flags.boolean({description: 'program the planned routes through rtnetlink (needs CAP_NET_ADMIN)', default: false}),
    revert: Flags.string({description: 'undo an apply from its journal', helpValue: 'JOURNAL'}),
    yes: Flags.boolean({char: 'y', description: 'do not ask; required to write when there is no TTY', default: false}),
    'bird-config': Flags.boolean({description: 'print the durable BIRD kernel filter for this node\'s BIRD version', default: false}),
    protocol: Flags.integer({description: 'protocol number routedoctor\'s routes carry (findable, removable)', default: DEFAULT_FIX_PROTOCOL_NUMBER, min: 1, max: 255}),
    table: Flags.integer({description: 'the overlay table routedoctor\'s routes live in (outside 1-255, not BIRD\'s kernel table)', default: DEFAULT_OVERLAY_TABLE}),
    'rule-priority': Flags.integer({description: 'priority of the overlay\'s `ip rule to POOL lookup TABLE` (1-32765: before main\'s 32766)', default: DEFAULT_RULE_PRIORITY}),
    'journal-dir': Flags.string({description: 'where journals (and the apply lock) are written', default: '/var/lib/routedoctor', helpValue: 'DIR'}),
    watch: Flags.integer({description: 'seconds to watch for a route war after writing', default: 5, min: 0}),
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Fix)
    this.jsonOutput = flags.json
    const c = palette()
    // only this command needs them: not at start-up
    const [{FIX_CONTEXT, appliedReport, planFix}, {confirm}, {renderApply, renderRevert}] = await Promise.all([import('../services/fix.js'), import('../cli/confirm.js'), import('../render/apply.js')])
    if (flags.revert) {
      if (!(await confirm(`Revert the routes journaled in ${flags.revert}?`, flags.yes))) return
      const {revertJournal} = await import('../netlink/apply.js')
      const result = await revertJournal(flags.revert)
      if (flags.json) this.printJson({schema: 1, ...result})
      else this.print(renderRevert(result, c))
      process.exitCode = result.verified && result.errors.length === 0 ? 0 : 1
      return
    }
    if (flags.apply && flags.from) throw new UsageError('--apply programs the live kernel: it cannot be used with --from')
    const ctx = new Context(await loadSettledSnapshot(flags['bird-config'] && !flags.apply ? sourceOptions(flags) : judged(sourceOptions(flags)), args.prefix), {...FIX_CONTEXT, fixProtocol: String(flags.protocol), overlayTable: flags.table})
    const {report, items, plan} = planFix(ctx, args.prefix, {table: flags.table, rulePriority: flags['rule-priority']})
    const changes = items.length + plan.rules.length
    if (flags['bird-config'] && !flags.apply) {
      if (flags.json) this.printJson(report)
      else this.print(renderBirdConfig(report, c))
      return
    }
    if (report.unavailable) {
      // nothing can be planned: say so, and do not report a healthy node
      if (flags.json) this.printJson(report)
      else this.print(renderFix(report, c))
      process.exitCode = 1
      return
    }
    if (!flags.apply) {
      // a full table's plan is hundreds of MB of JSON: written element by element, never as one string
      if (flags.json) await this.streamJson(report)
      else this.print(renderFix(report, c) + (changes > 0 ? c.dim('\nDry run: nothing was changed. `routedoctor fix --apply` makes these changes.') : ''))
      return
    }
    if (!flags.json) this.print(renderFix(report, c))
    if (changes === 0) {
      if (flags.json) this.printJson({...report, applied: [], verified: true, journal: null})
      return
    }
    const what = [items.length > 0 ? `${items.length} route change${items.length === 1 ? '' : 's'}` : '', plan.rules.length > 0 ? `${plan.rules.length} rule change${plan.rules.length === 1 ? '' : 's'}` : '']
    if (!(await confirm(`Make ${what.filter(Boolean).join(' and ')} now?`, flags.yes))) return
    const {applyFix} = await import('../services/fix.js')
    const result = await applyFix(plan, {journalDir: flags['journal-dir'], watchSeconds: flags.watch})
    if (flags.json) await this.streamJson(appliedReport(report, result))
    else this.print(renderApply(result, c))
    process.exitCode = result.verified && result.errors.length === 0 && !(result.routeWar?.length) ? 0 : 1
  }
}
