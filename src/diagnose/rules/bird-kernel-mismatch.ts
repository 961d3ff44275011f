// Presence, not shape: BIRD holds a usable best route the kernel lacks (or has only from another
// owner). A kernel export filter legitimately rewrites next hops, so shapes are not compared here.
import {NONE, prefixFinding, type PrefixRule} from '../rule.js'
import {formatBirdPath, formatKernelRouteLine} from '../../model/format.js'
import {isBgp, KERNELS_OWN} from '../../model/snapshot-index.js'

const DROPS = new Set(['unreachable', 'blackhole', 'prohibit'])

export const rule: PrefixRule = {
  id: 'bird-kernel-mismatch',
  scope: 'prefix',
  run(ctx, facts) {
    const p = facts.birdPrimary
    if (!p || facts.local || !ctx.haveKernel) return NONE
    // a route BIRD learnt from the kernel (inherit) or a connected one (device) is the kernel's own; no source: unknown
    const source = p.source
    const exported = isBgp(source) || (source !== undefined && source !== '' && !KERNELS_OWN.has(source))
    if (p.dest !== 'unicast' || !exported) return NONE
    // BIRD's own route, or routedoctor's that took its place (BIRD 1.6: replaced at metric 0)
    // (a route of theirs that drops the packets is no route: BIRD's is usable, the kernel's is not)
    const ours = facts.kernel.find((r) => (r.protocol === 'bird' || r.protocol === ctx.fixProtocol) && !DROPS.has(r.type))
    // another owner's route that drops the packets, found before ours (a rule's table, a lower metric)
    const e = facts.effective
    const shadow = ours !== undefined && e !== undefined && e !== ours && DROPS.has(e.type) &&
      e.protocol !== 'bird' && e.protocol !== ctx.fixProtocol ? e : undefined
    if (ours !== undefined && shadow === undefined) return NONE
    const others = facts.kernel.filter((r) => r.protocol !== ctx.fixProtocol)
    // Felix programming cluster routes (proto 80) while BIRD only speaks BGP: the kernel is right, nothing is missing
    const dev = ctx.snapshot.tunnelDev
    const hops = new Set(facts.bgpNextHops)
    if (
      shadow === undefined &&
      others.some(
        (r) =>
          r.type === 'unicast' &&
          r.nexthops.length > 0 &&
          r.nexthops.every((n) => n.dev === dev && n.gateway && hops.has(n.gateway.address)),
      )
    )
      return NONE
    return [
      prefixFinding(ctx, 'bird-kernel-mismatch', facts.prefix, () => ({
        title:
          facts.effective !== undefined && DROPS.has(facts.effective.type)
            ? `BIRD has a usable path for ${facts.prefix} but the kernel's route drops it ` +
              `(${facts.effective.type}, proto ${facts.effective.protocol ?? '?'})`
            : `BIRD has ${facts.prefix} but the kernel ${others.length > 0 ? `has it only from proto ${others.map((r) => r.protocol).join(', ')}` : 'does not'}`,
        detail: shadow
          ? `BIRD's best path is ${formatBirdPath(p)}, and the kernel holds \`${formatKernelRouteLine(ours!)}\`, but the ` +
            `route in force is \`${formatKernelRouteLine(shadow)}\`, found first: it ${shadow.type === 'blackhole' ? 'discards' : 'rejects'} the packets.`
          : `BIRD's best path is ${formatBirdPath(p)}, yet no usable proto bird route for it is in the kernel` +
            `${p.kernelSyncFailed ? ' (BIRD marks it "!": its kernel sync failed)' : ''}. The kernel protocol's export filter may reject it, or the write failed.`,
        evidence: [
          ...ctx.cite(p.pos),
          ...(shadow ? [...new Set([ours!, shadow, ...others])] : others).flatMap((r) => ctx.citeKernelRoute(r)),
        ],
        fix: shadow
          ? `Find who wrote the proto ${shadow.protocol ?? '?'} route and remove it if nothing needs it: ip route del ${formatKernelRouteLine(shadow)}`
          : 'Check the kernel protocol export filter and BIRD\'s log for netlink errors; routedoctor fix programs the tunnel route meanwhile.',
      })),
    ]
  },
}
