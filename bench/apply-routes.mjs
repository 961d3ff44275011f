// The planned routes of the apply benchmark, shared by run.mjs (the `ip -batch` file) and
// apply-driver.mjs (routedoctor's engine): COUNT /26 blocks of 10.0.0.0/8 from 10.0.0.64, each
// via one of 250 nodes 172.20.R.H dev tunl0 onlink, metric 31, proto 158.
export const APPLY_METRIC = 31
export const APPLY_PROTO = 158

/** The i-th /26 block of 10.0.0.0/8 (from 1: 10.0.0.64/26). */
export function blockOf(i) {
  const v = 10 * 2 ** 24 + i * 64
  return `${(v >>> 24) & 255}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}/26`
}

export function plannedRoutes(n) {
  const out = []
  for (let i = 1; i <= n; i++) {
    const dst = blockOf(i)
    const node = (i * 7919) % 250
    const gateway = `172.20.${node % 10}.${10 + Math.floor(node / 10)}`
    out.push({dst, gateway})
  }
  return out
}

export function ipBatchText(n, {metric = APPLY_METRIC, proto = APPLY_PROTO} = {}) {
  return plannedRoutes(n).map(({dst, gateway}) => `route replace ${dst} via ${gateway} dev tunl0 onlink metric ${metric} proto ${proto}\n`).join('')
}
