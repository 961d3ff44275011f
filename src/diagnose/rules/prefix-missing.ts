// Neither BIRD nor the kernel holds the prefix (asked for by `explain`), or the kernel lacks it while
// BIRD has no usable path either.
import {NONE, prefixFinding, type PrefixRule} from '../rule.js'

export const rule: PrefixRule = {
  id: 'prefix-missing',
  scope: 'prefix',
  run(ctx, facts) {
    if (facts.local || facts.kernel.length > 0 || facts.effective) return NONE
    const usable = facts.bird.some((r) => r.dest !== 'unreachable' && r.dest !== 'blackhole' && r.dest !== 'prohibited')
    if (usable) return NONE // that is bird-kernel-mismatch
    const down = facts.ownersDown.map((p) => `${p.name} (${p.neighborAddress ?? '?'}: ${p.bgpState ?? p.state}${p.lastError ? `, ${p.lastError}` : ''})`)
    return [prefixFinding(ctx, 'prefix-missing', facts.prefix, () => ({
      title: `${facts.prefix} is in neither the kernel nor BIRD${facts.bird.length > 0 ? ' (as a usable path)' : ''}`,
      detail: `No kernel route and no BGP path for ${facts.prefix}: the node that owns it is not announcing it to this node.` +
        (down.length > 0 ? ` BGP sessions down: ${down.join('; ')}.` : ' All BGP sessions are Established: the owner may not have the block, or it is not exported.'),
      evidence: [...facts.bird.flatMap((r) => ctx.cite(r.pos)), ...facts.ownersDown.flatMap((p) => ctx.cite({...p.pos, endLine: p.pos.line}))],
      fix: down.length > 0 ? 'Bring the BGP session(s) back up (see peer-down).' : 'Check which node owns the block (calicoctl ipam show --show-blocks) and its BIRD export.',
    }))]
  },
}
