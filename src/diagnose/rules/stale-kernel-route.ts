// A proto bird route BIRD no longer holds: left behind (persist, a crash, a graceful restart).
import {NONE, prefixFinding, type PrefixRule} from '../rule.js'
import {formatKernelRouteLine} from '../../model/format.js'

export const rule: PrefixRule = {
  id: 'stale-kernel-route',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.bird.length > 0 || facts.kernel.length === 0 || !ctx.haveBird) return NONE
    return facts.kernel
      .filter((r) => r.protocol === 'bird')
      .map((r) =>
        prefixFinding(ctx, 'stale-kernel-route', facts.prefix, () => ({
          title: `Kernel route ${facts.prefix} is proto bird but BIRD no longer holds it`,
          detail: `\`${formatKernelRouteLine(r)}\` was written by BIRD, which has no path for ${facts.prefix} now: traffic follows a route nobody maintains.`,
          evidence: ctx.citeKernelRoute(r),
          fix: `ip route del ${facts.prefix}${r.table !== 'main' ? ` table ${r.table}` : ''} proto bird${r.metric ? ` metric ${r.metric}` : ''}`,
        })),
      )
  },
}
