// Captures a snapshot directory (DESIGN §3) of a lab node.
//   npx tsx test/lab/capture.ts SCENARIO OUTDIR [NODE]
// starts SCENARIO, waits until it has settled, writes NODE's (default n1) snapshot to OUTDIR and
// tears the lab down again (also on failure or Ctrl-C).

import {mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {pathToFileURL} from 'node:url'
import {SCENARIOS, startLab, type BirdNode, type Lab, type ScenarioName} from './lab.js'

export const IPPOOLS_YAML = `apiVersion: projectcalico.org/v3
kind: IPPoolList
items:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata:
    name: default-ipv4-ippool
  spec:
    allowedUses:
    - Workload
    - Tunnel
    blockSize: 26
    cidr: 192.168.0.0/16
    ipipMode: Always
    natOutgoing: true
    nodeSelector: all()
    vxlanMode: Never
`

/** file name → the command (argv, run inside the node's namespace) that produces it */
export const IP_SOURCES: Record<string, string[]> = {
  'ip-j-d-route.json': ['ip', '-j', '-d', 'route', 'show', 'table', 'all'],
  'ip-d-route.txt': ['ip', '-d', 'route', 'show', 'table', 'all'],
  'ip-j-d-link.json': ['ip', '-j', '-d', 'link', 'show'],
  'ip-d-link.txt': ['ip', '-d', 'link', 'show'],
  'ip-j-addr.json': ['ip', '-j', 'addr', 'show'],
  'ip-j-neigh.json': ['ip', '-j', 'neigh', 'show'],
  'ip-6-d-route.txt': ['ip', '-6', '-d', 'route', 'show', 'table', 'all'],
  'ip-rule.txt': ['ip', 'rule', 'show'],
}

export const BIRDC_SOURCES: Record<string, string> = {
  'birdc-show-status.txt': 'show status',
  'birdc-show-route-all.txt': 'show route all',
  'birdc-show-protocols-all.txt': 'show protocols all',
}

/** `name = value` lines read from /proc/sys inside the namespace, in the fixtures' order. */
const SYSCTL_SCRIPT = `
p=/proc/sys/net/ipv4
for k in ip_forward fib_multipath_hash_policy fib_multipath_use_neigh; do
  [ -r $p/$k ] && echo "net.ipv4.$k = $(cat $p/$k)"
done
for d in all default; do echo "net.ipv4.conf.$d.rp_filter = $(cat $p/conf/$d/rp_filter)"; done
for d in $(ls $p/conf | LC_ALL=C sort); do
  case $d in all|default) continue;; esac
  echo "net.ipv4.conf.$d.rp_filter = $(cat $p/conf/$d/rp_filter)"
done
`

const withNewline = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`)

/** Writes `node`'s snapshot directory; returns the file names written. */
export async function captureSnapshot(lab: Lab, outDir: string, node: BirdNode = 'n1'): Promise<string[]> {
  mkdirSync(outDir, {recursive: true})
  const written: string[] = []
  const write = (name: string, text: string) => {
    writeFileSync(path.join(outDir, name), text)
    written.push(name)
  }
  for (const [name, argv] of Object.entries(IP_SOURCES)) {
    const r = await lab.exec(node, argv)
    if (r.exitCode !== 0) throw new Error(`capture: ${argv.join(' ')} failed: ${r.stderr}`)
    write(name, withNewline(r.stdout))
  }
  const sysctl = await lab.exec(node, ['sh', '-c', SYSCTL_SCRIPT])
  if (sysctl.exitCode !== 0) throw new Error(`capture: reading sysctls failed: ${sysctl.stderr}`)
  write('sysctl.txt', withNewline(sysctl.stdout))
  for (const [name, cmd] of Object.entries(BIRDC_SOURCES)) {
    const text = await lab.birdc(node, cmd)
    write(name, withNewline(text))
  }
  write('bird.conf', readFileSync(lab.birdConfigPath(node), 'utf8'))
  write('ippools.yaml', IPPOOLS_YAML)
  return written
}

async function main(argv: string[]): Promise<number> {
  const [scenario, outDir, node = 'n1'] = argv
  if (!scenario || !outDir || !(SCENARIOS as readonly string[]).includes(scenario) || !['n1', 'n2', 'n3'].includes(node)) {
    process.stderr.write(`usage: npx tsx test/lab/capture.ts SCENARIO OUTDIR [n1|n2|n3]\n  scenarios: ${SCENARIOS.join(', ')}\n`)
    return 2
  }
  const lab = await startLab(scenario as ScenarioName)
  const onSignal = () => {
    void lab.teardown().finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  try {
    const files = await captureSnapshot(lab, outDir, node as BirdNode)
    process.stdout.write(`captured ${scenario} (${lab.prefix}-${node}) into ${outDir}: ${files.join(', ')}\n`)
    return 0
  } finally {
    await lab.teardown()
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`capture: ${(error as Error).message}\n`)
      process.exit(1)
    },
  )
}
