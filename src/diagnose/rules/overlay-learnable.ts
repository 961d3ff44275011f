// A routedoctor route in the table BIRD's kernel protocol learns from (routes of earlier versions in `main`): BIRD
// can import it and, when its export filter accepts pool prefixes by prefix alone (Calico's), advertise it.
import {NONE, overlayGateways, prefixFinding, type PrefixRule} from '../rule.js'
import {formatKernelRouteLine} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'overlay-learnable',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.ours.length === 0) return NONE
    const learnable = facts.ours.filter((r) => ctx.kernelTables.includes(r.tableId))
    if (learnable.length === 0) return NONE
    return [
      prefixFinding(ctx, 'overlay-learnable', facts.prefix, () => ({
        title: `routedoctor's route for ${facts.prefix} is in table ${learnable[0].table}, which BIRD learns from`,
        detail:
          `\`${formatKernelRouteLine(learnable[0])}\` sits in the table BIRD's kernel protocol syncs. With ` +
          '`learn` and `import all` (Calico\'s template) BIRD imports it, and once nobody else announces the block its export ' +
          'filter advertises it to every peer: the whole cluster then routes the block to this node.',
        evidence: learnable.flatMap((r) => ctx.citeKernelRoute(r)),
        // the plan moves it only while a correction is wanted; otherwise it withdraws it (overlay-stale says why)
        fix: overlayGateways(ctx, facts).length > 0
          ? `routedoctor fix --apply moves it into the overlay table ${ctx.overlayTable}, which BIRD never learns.`
          : 'routedoctor fix --apply withdraws it: no correction is wanted for the prefix today.',
      })),
    ]
  },
}
