// Every rule, one file per finding id. Order is the order findings are listed in.
import type {HostRule, PrefixRule} from '../rule.js'
import {rule as birdKernelMismatch} from './bird-kernel-mismatch.js'
import {rule as blockAffinityConflict} from './block-affinity-conflict.js'
import {rule as blockOwnerMismatch} from './block-owner-mismatch.js'
import {rule as blockUnrouted} from './block-unrouted.js'
import {rule as blockWithoutIpamblock} from './block-without-ipamblock.js'
import {rule as borrowedAddressUnrouted} from './borrowed-address-unrouted.js'
import {rule as conflictingRouteOwners} from './conflicting-route-owners.js'
import {rule as forwardingOff} from './forwarding-off.js'
import {rule as hashPolicyL3} from './hash-policy-l3.js'
import {rule as localBlock} from './local-block.js'
import {rule as multipathLost} from './multipath-lost.js'
import {rule as nodeAddressMismatch} from './node-address-mismatch.js'
import {rule as nexthopUnreachable} from './nexthop-unreachable.js'
import {rule as nexthopUnresolvableByBird} from './nexthop-unresolvable-by-bird.js'
import {rule as onlinkMissing} from './onlink-missing.js'
import {rule as overlayActive} from './overlay-active.js'
import {rule as overlayLearnable} from './overlay-learnable.js'
import {rule as overlayStale} from './overlay-stale.js'
import {rule as peerDown} from './peer-down.js'
import {rule as prefixMissing} from './prefix-missing.js'
import {rule as routeLeakedToBgp} from './route-leaked-to-bgp.js'
import {rule as routeOwnerConflict} from './route-owner-conflict.js'
import {rule as rpFilterStrict} from './rp-filter-strict.js'
import {rule as staleKernelRoute} from './stale-kernel-route.js'
import {rule as tunnelBypassedByEcmp} from './tunnel-bypassed-by-ecmp.js'
import {rule as tunnelEndpointMismatch} from './tunnel-endpoint-mismatch.js'
import {rule as tunnelDeviceDown} from './tunnel-device-down.js'
import {rule as tunnelDeviceMissing} from './tunnel-device-missing.js'
import {rule as tunnelMtu} from './tunnel-mtu.js'
import {rule as tunnelNotProgrammed} from './tunnel-not-programmed.js'

export const prefixRules: PrefixRule[] = [
  prefixMissing, birdKernelMismatch, nexthopUnresolvableByBird, nexthopUnreachable, tunnelBypassedByEcmp,
  tunnelNotProgrammed, multipathLost, onlinkMissing, conflictingRouteOwners, staleKernelRoute, tunnelEndpointMismatch,
  overlayStale, overlayLearnable, routeLeakedToBgp, overlayActive, localBlock,
  blockOwnerMismatch, blockAffinityConflict, blockWithoutIpamblock, blockUnrouted,
]

export const hostRules: HostRule[] = [
  peerDown, tunnelDeviceMissing, tunnelDeviceDown, forwardingOff, tunnelMtu, rpFilterStrict, hashPolicyL3,
  nodeAddressMismatch, routeOwnerConflict, borrowedAddressUnrouted,
]
