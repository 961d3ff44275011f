// Neither BIRD nor the kernel holds the prefix (asked for by `explain`), or the kernel lacks it while
// BIRD has no usable path either.
import {isBgp, KERNELS_OWN, type SnapshotIndex} from '../../model/snapshot-index.js'
import {formatKernelRoute} from '../../model/format.js'
import {inInput, NONE, prefixFinding, type PrefixRule} from '../rule.js'

const BROKEN_TYPES = new Set(['unreachable', 'blackhole', 'prohibit'])

/** What the snapshot says about the sessions when none is down: only what it holds. */
function sessionsKnown(ctx: SnapshotIndex): string {
  const n = ctx.bgpProtocols.length
  if (n > 0) {
    const all = n === 1 ? 'The one BGP session is Established' : `All ${n} BGP sessions are Established`
    return `${all}: the owner may not have the block, or it is not exported.`
  }
  if (!ctx.has('birdc-show-protocols-all.txt')) {
    return `No BGP session data ${inInput(ctx)} (no birdc-show-protocols-all.txt): ` +
      'whether the owner\'s session is up is unknown.'
  }
  return 'BIRD has no BGP sessions: nothing can announce the block to this node.'
}

export const rule: PrefixRule = {
  id: 'prefix-missing',
  scope: 'prefix',
  run(ctx, facts) {
    const e = facts.effective
    if (facts.local || (e === undefined ? facts.kernel.length > 0 : !BROKEN_TYPES.has(e.type))) return NONE
    // a usable best path the kernel lacks is bird-kernel-mismatch's (the same test as that rule's); a usable path that
    // is not BIRD's best leaves the prefix missing here
    const p = facts.birdPrimary
    const source = p?.source
    const exported = isBgp(source) || (source !== undefined && source !== '' && !KERNELS_OWN.has(source))
    if (p !== undefined && p.dest === 'unicast' && exported && ctx.haveKernel) return NONE
    // the kernel holds only a route that drops the packets: BIRD's unreachable paths, and BIRD's own
    // unreachable route without BIRD's data, are nexthop-unresolvable-by-bird's
    const unresolved = facts.bestSet.some((r) => r.dest === 'unreachable' &&
      (r.bgpNextHop === undefined || !ctx.resolve(r.bgpNextHop).own))
    const birdsOwn = e?.type === 'unreachable' && e.protocol === 'bird' && facts.bird.length === 0 && !ctx.haveBird
    if (e !== undefined && (unresolved || birdsOwn)) return NONE
    const down = facts.ownersDown.map(
      (p) =>
        `${p.name} (${p.neighborAddress ?? '?'}: ${p.bgpState ?? p.state}${p.lastError ? `, ${p.lastError}` : ''})`,
    )
    return [
      prefixFinding(ctx, 'prefix-missing', facts.prefix, () => ({
        title:
          e !== undefined
            ? `${facts.prefix} has no usable route: the kernel holds only \`${formatKernelRoute(e).split('\n')[0]}\`` +
              (ctx.haveBird ? ', BIRD no usable path' : '')
            : `${facts.prefix} is in neither the kernel nor BIRD${facts.bird.length > 0 ? ' (as a usable path)' : ''}`,
        detail:
          (e !== undefined
            ? `The kernel ${e.type === 'blackhole' ? 'discards' : 'rejects'} packets to ${facts.prefix} (proto ${e.protocol ?? '?'}), and ` +
              `${ctx.haveBird ? 'BIRD has no usable BGP path for it' : `no BIRD routes ${inInput(ctx)} show a path`}: ` +
              'the node that owns it is not reachable from here.'
            : `No kernel route and no BGP path for ${facts.prefix}: the node that owns it is not announcing it to this node.`) +
          (down.length > 0 ? ` BGP session${down.length === 1 ? '' : 's'} down: ${down.join('; ')}.` : ` ${sessionsKnown(ctx)}`),
        evidence: [
          ...facts.bird.flatMap((r) => ctx.cite(r.pos)),
          ...(e !== undefined ? ctx.citeKernelRoute(e) : []),
          ...facts.ownersDown.flatMap((p) => ctx.cite({...p.pos, endLine: p.pos.line})),
        ],
        fix:
          down.length > 0
            ? `Bring the BGP session${down.length === 1 ? '' : 's'} back up (see peer-down).`
            : 'Check which node owns the block (calicoctl ipam show --show-blocks) and its BIRD export.',
      })),
    ]
  },
}
