// routedoctor's correction is the route in force, from a table BIRD does not learn, and it is what today's plan wants.
import {carriesPlan, NONE, overlayGateways, prefixFinding, type PrefixRule} from '../rule.js'
import {formatKernelRouteLine} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'overlay-active',
  scope: 'prefix',
  run(ctx, facts) {
    const r = facts.effective
    if (!r || facts.ours.length === 0 || r.protocol !== ctx.fixProtocol || ctx.kernelTables.includes(r.tableId))
      return NONE
    if (!carriesPlan(ctx, r, overlayGateways(ctx, facts))) return NONE
    return [
      prefixFinding(ctx, 'overlay-active', facts.prefix, () => ({
        title: `routedoctor's correction for ${facts.prefix} is in force`,
        detail:
          `\`${formatKernelRouteLine(r)}\` in the overlay table ${r.tableId}` +
          `${facts.rule ? ` (rule \`${facts.rule.priority}: ${facts.rule.text}\`)` : ''} takes precedence over ${facts.kernel[0] ? `\`${formatKernelRouteLine(facts.kernel[0])}\`` : 'the main table'}. ` +
          'Once BIRD programs the right route itself (the durable fix), routedoctor fix --apply withdraws it.',
        evidence: [
          ...(facts.rule ? ctx.cite(facts.rule.pos) : []),
          ...ctx.citeKernelRoute(r),
          ...facts.kernel.flatMap((k) => ctx.citeKernelRoute(k)),
        ],
      })),
    ]
  },
}
