// Captures the output shapes users paste from the lab into test/fixtures/pastes/:
//   npx tsx test/lab/capture-pastes.ts [OUTDIR [bird2|bird16]]
// - restricted birdc (`birdc -r`) and a restricted raw socket (`restrict`, reply 0016);
// - `show status` of a BIRD started in graceful-restart recovery (`bird -R`), birdc and raw socket;
// - BIRD 1.6 plain `show route` (no `all`) on the ipv6-ll scenario (seed failure 2), as a snapshot;
// - a CrossSubnet pool: a BIRD on tor1 announces 192.168.50.0/26 with next hop 172.31.11.1, on n1's
//   eth0 subnet, so n1 routes it directly (`via 172.31.11.1 dev eth0 proto bird`), as a snapshot.
// Every lab is torn down again, also on failure.

import {spawn, type ChildProcess} from 'node:child_process'
import {closeSync, mkdirSync, openSync, readFileSync, writeFileSync} from 'node:fs'
import net from 'node:net'
import path from 'node:path'
import {pathToFileURL} from 'node:url'
import {execa} from 'execa'
import {captureSnapshot, IPPOOLS_YAML} from './capture.js'
import {BIRD_BINARIES, startLab, type Lab} from './lab.js'

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
const withNewline = (text: string) => (text === '' || text.endsWith('\n') ? text : `${text}\n`)

/** Raw control-socket transcript: the greeting and each command's reply, codes and continuations as sent. */
export async function rawSocket(socketPath: string, commands: string[]): Promise<string> {
  const sock = net.createConnection(socketPath)
  let buf = ''
  let waiter: (() => void) | undefined
  sock.on('data', (d) => {
    buf += d.toString('latin1')
    waiter?.()
  })
  const untilFinal = async () => {
    const until = Date.now() + 5000
    while (!/^\d{4} .*\n/m.test(buf)) {
      if (Date.now() > until) throw new Error(`raw socket: no final reply line in ${JSON.stringify(buf)}`)
      await new Promise<void>((resolve) => {
        waiter = resolve
        setTimeout(resolve, 100)
      })
    }
    const out = buf
    buf = ''
    return out
  }
  let transcript = await untilFinal()
  for (const cmd of commands) {
    sock.write(`${cmd}\n`)
    transcript += await untilFinal()
  }
  sock.end()
  return transcript
}

async function birdcArgs(lab: Lab, node: 'n1', args: string[]): Promise<string> {
  const r = await execa(BIRD_BINARIES[lab.birdFlavour(node)].birdc, ['-s', lab.birdSocket(node), ...args], {
    reject: false,
    stdin: 'ignore',
    stripFinalNewline: false,
    timeout: 10_000,
  })
  if (r.exitCode !== 0) throw new Error(`birdc ${args.join(' ')}: ${String(r.stderr || r.stdout)}`)
  return String(r.stdout)
}

/** Stops n1's BIRD and starts it again in graceful-restart recovery (`-R`); returns the process. */
export async function restartInRecovery(lab: Lab): Promise<ChildProcess> {
  await lab.stopBird('n1')
  const log = openSync(path.join(lab.dir, 'n1-recovery.log'), 'a')
  const bin = BIRD_BINARIES[lab.birdFlavour('n1')].bird
  const conf = lab.birdConfigPath('n1')
  const child = spawn('ip', ['netns', 'exec', lab.ns('n1'), bin, '-R', '-f', '-c', conf, '-s', lab.birdSocket('n1')], {
    stdio: ['ignore', log, log],
  })
  closeSync(log)
  const until = Date.now() + 10_000
  for (;;) {
    try {
      await lab.birdc('n1', 'show status')
      return child
    } catch {
      if (Date.now() > until || child.exitCode !== null) throw new Error('BIRD -R on n1 did not come up')
      await sleep(100)
    }
  }
}

export async function gracefulRestart(lab: Lab, out: string, tag: string): Promise<void> {
  const child = await restartInRecovery(lab)
  try {
    writeFileSync(path.join(out, `${tag}-gr-show-status.txt`), withNewline(await lab.birdc('n1', 'show status')))
    writeFileSync(path.join(out, `${tag}-gr-show-status-raw.txt`), await rawSocket(lab.birdSocket('n1'), ['show status']))
  } finally {
    child.kill('SIGTERM')
    await sleep(500)
  }
}

export async function restricted(lab: Lab, out: string, tag: string): Promise<void> {
  for (const [file, cmd] of [
    ['show-status', 'show status'],
    ['show-protocols-all', 'show protocols all'],
    ['show-route-all', 'show route all'],
  ] as const) {
    writeFileSync(path.join(out, `${tag}-restricted-${file}.txt`), withNewline(await birdcArgs(lab, 'n1', ['-r', ...cmd.split(' ')])))
  }
  writeFileSync(
    path.join(out, `${tag}-restricted-raw.txt`),
    await rawSocket(lab.birdSocket('n1'), ['restrict', 'show protocols']),
  )
}

const TOR1_CONF = `router id 172.31.11.1;
protocol device { scan time 2; }
protocol static blocks { ipv4 { import all; export none; }; route 192.168.50.0/26 blackhole; }
protocol bgp n1 {
  local 172.31.11.1 as 64512; neighbor 172.31.11.3 as 64512; direct;
  ipv4 { import none; export where net ~ [ 192.168.0.0/16{26,32} ]; next hop self; };
  connect delay time 2; connect retry time 5;
}
`
const N1_TOR1_SESSION = `protocol bgp Node_172_31_11_1 {
  local 172.31.11.3 as 64512; neighbor 172.31.11.1 as 64512; direct;
  ipv4 { import all; export none; };
  connect delay time 2; connect retry time 5;
}
`

export async function crossSubnet(lab: Lab, outDir: string): Promise<void> {
  const torConf = path.join(lab.dir, 'tor1.conf')
  writeFileSync(torConf, TOR1_CONF)
  const log = openSync(path.join(lab.dir, 'tor1.log'), 'a')
  const tor = spawn(
    'ip',
    ['netns', 'exec', lab.ns('tor1'), BIRD_BINARIES['2'].bird, '-f', '-c', torConf, '-s', path.join(lab.dir, 'tor1.ctl')],
    {stdio: ['ignore', log, log]},
  )
  closeSync(log)
  try {
    const conf = lab.birdConfigPath('n1')
    writeFileSync(conf, readFileSync(conf, 'utf8') + N1_TOR1_SESSION)
    await lab.birdc('n1', 'configure')
    await lab.waitEstablished('n1', 20_000, ['Node_172_31_11_1'])
    await lab.waitRoute('n1', '192.168.50.0/26', (rs) => rs.some((r) => r.gateway === '172.31.11.1' && r.protocol === 'bird'))
    await sleep(3000)
    await captureSnapshot(lab, outDir)
    writeFileSync(path.join(outDir, 'ippools.yaml'), IPPOOLS_YAML.replace('ipipMode: Always', 'ipipMode: CrossSubnet'))
  } finally {
    tor.kill('SIGTERM')
    await sleep(300)
  }
}

async function main(): Promise<void> {
  const out = path.resolve(process.argv[2] ?? 'test/fixtures/pastes')
  mkdirSync(out, {recursive: true})
  const which = new Set(process.argv.slice(3))
  const want = (s: string) => which.size === 0 || which.has(s)

  if (want('bird2')) {
    const lab = await startLab('bird2-ecmp')
    try {
      await restricted(lab, out, 'bird2')
      await crossSubnet(lab, path.join(out, 'lab-bird2-crosssubnet'))
      await gracefulRestart(lab, out, 'bird2')
    } finally {
      await lab.teardown()
    }
  }
  if (want('bird16')) {
    const lab = await startLab('bird16-ipv6-ll')
    try {
      const dir = path.join(out, 'lab-bird16-ipv6-ll-plain-route')
      await captureSnapshot(lab, dir)
      writeFileSync(path.join(dir, 'birdc-show-route-all.txt'), withNewline(await lab.birdc('n1', 'show route')))
      await restricted(lab, out, 'bird16')
      await gracefulRestart(lab, out, 'bird16')
    } finally {
      await lab.teardown()
    }
  }
  process.stdout.write(`captured into ${out}\n`)
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().then(
    () => process.exit(0),
    (error: unknown) => {
      process.stderr.write(`capture-pastes: ${(error as Error).stack}\n`)
      process.exit(1)
    },
  )
}
