// What a BIRD version can do for the tunnel (DESIGN §1, reference/calico-domain.md §2.4): a settable `onlink` for the
// kernel filter since 2.0.12 and 3.2 (3.0/3.1, 1.6 and Calico's fork have none); IPv4 routes with IPv6 next hops
// (`via inet6`) imported since 2.0.8.

/** "2.0.12" -> [2, 0, 12]; the first run of dotted numbers (Calico's fork is told apart by its `calicoFork`). */
function versionTuple(v: string): readonly number[] {
  // rules ask once per broken prefix, and a node has one version: each text is read once
  let tuple = tuples.get(v)
  if (tuple === undefined) {
    if (tuples.size >= 64) tuples.clear()
    tuple = Object.freeze((v.match(/\d+(\.\d+)*/)?.[0] ?? '').split('.').map(Number))
    tuples.set(v, tuple)
  }
  return tuple
}

const tuples = new Map<string, readonly number[]>()

/** The major version: 1, 2 or 3 (0 when the text names none). */
export function birdMajor(version: string): number {
  return versionTuple(version)[0] || 0
}

export function versionAtLeast(version: string, min: readonly number[]): boolean {
  const v = versionTuple(version)
  for (let i = 0; i < min.length; i++) {
    const a = v[i] ?? 0
    if (a !== min[i]) return a > min[i]
  }
  return true
}

/** Can a kernel export filter of this BIRD point routes at the tunnel onlink (2.0.12+ in 2.x, 3.2+ in 3.x)? */
export function hasOnlinkAttribute(version: string, calicoFork: boolean): boolean {
  if (calicoFork) return false
  const major = birdMajor(version)
  if (major === 2) return versionAtLeast(version, [2, 0, 12])
  return major >= 3 && versionAtLeast(version, [3, 2])
}

/** Does this BIRD import an IPv4 route whose next hops are IPv6 (`via inet6`, RTA_VIA)? Upstream 2.0.8 and later. */
export function importsViaInet6(version: string, calicoFork: boolean): boolean {
  return !calicoFork && versionAtLeast(version, [2, 0, 8])
}
