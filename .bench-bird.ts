import {parseBirdRoutes, createBirdRouteStream} from './src/parse/bird-routes.js'
const n = Number(process.argv[2])
const parts: string[] = ['BIRD 2.0.12 ready.\nTable master4:\n']
for (let i = 0; i < n; i++) {
  const a = (i >> 16) & 255, b = (i >> 8) & 255, c = i & 255
  parts.push(`${32+a}.${b}.${c}.0/24         unicast [from_c2 15:55:30.293] * (100) [AS64601i]\n\tvia 10.0.6.1 on vB3\n\tType: BGP univ\n\tBGP.origin: IGP\n\tBGP.as_path: 64601 64602 64603 64604\n\tBGP.next_hop: 10.0.6.1\n\tBGP.med: 10\n\tBGP.local_pref: 100\n\tBGP.community: (64601,1) (64601,2) (64601,3)\n\tBGP.ext_community: (rt, 64601, 1)\n\tBGP.large_community: (64601, 1, 1) (64601, 2, 2)\n`)
}
const text = parts.join('')
console.log('MB', (text.length / 1e6).toFixed(1))
let t = performance.now()
let count = 0
const s = createBirdRouteStream('x', () => count++)
let start = 0, ln = 1
while (start < text.length) { let e = text.indexOf('\n', start); if (e < 0) e = text.length; s.push(text.slice(start, e), ln++); start = e + 1 }
s.end()
console.log('stream', count, (performance.now() - t).toFixed(0), 'ms')
t = performance.now()
const r = parseBirdRoutes(text)
console.log('retain', r.length, (performance.now() - t).toFixed(0), 'ms', 'heap MB', (process.memoryUsage().heapUsed/1e6).toFixed(0))
