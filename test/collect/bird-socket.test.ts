// The control-socket client against small local unix-socket servers that play BIRD: greeting,
// replies in awkward chunks, error replies, silence, a stale socket file, a missing one.

import { execFileSync, spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { afterAll, afterEach, describe, expect, it } from 'vitest'
import {
  BirdError,
  BirdSocket,
  BirdSocketMissingError,
  BirdSocketNotFoundError,
  BirdSocketPermissionError,
  BirdSocketRefusedError,
  BirdTimeoutError,
  findBirdSocket,
} from '../../src/collect/bird-socket.js'
import { RouteDoctorError } from '../../src/model/errors.js'

const dir = mkdtempSync(path.join(os.tmpdir(), 'h3-sock-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const servers: net.Server[] = []
const clients: BirdSocket[] = []
afterEach(async () => {
  for (const c of clients.splice(0)) c.close()
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))))
})

let n = 0
/** A fake BIRD: `onCommand` answers each received command line through `send`. */
async function fakeBird(
  onCommand: (cmd: string, send: (s: string) => void, seen: string[]) => void,
  greeting: string | null = '0001 BIRD 2.0.12 ready.\n',
): Promise<{ path: string; seen: string[] }> {
  const p = path.join(dir, `fake${n++}.ctl`)
  const seen: string[] = []
  const server = net.createServer((conn) => {
    conn.on('error', () => undefined)
    if (greeting !== null) conn.write(greeting)
    let buf = ''
    conn.on('data', (d) => {
      buf += d.toString()
      let nl: number
      while ((nl = buf.indexOf('\n')) >= 0) {
        const cmd = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        seen.push(cmd)
        onCommand(cmd, (s) => conn.write(s), seen)
      }
    })
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(p, r))
  return { path: p, seen }
}

async function connect(p: string, timeoutMs = 2000): Promise<BirdSocket> {
  const c = await BirdSocket.connect(p, { timeoutMs })
  clients.push(c)
  return c
}

describe('BirdSocket with a fake BIRD', () => {
  it('reads the greeting and the version', async () => {
    const { path: p } = await fakeBird(() => undefined, '0001 BIRD v0.3.3+birdv1.6.8 ready.\n')
    const c = await connect(p)
    expect(c.hello).toBe('BIRD v0.3.3+birdv1.6.8 ready.')
    expect(c.version).toBe('v0.3.3+birdv1.6.8')
  })

  it('assembles a reply that arrives in tiny delayed chunks, `0000` split from its newline', async () => {
    const reply = '1007-Table master4:\n 10.1.0.0/24          unicast [s 1] * (200)\n \tvia 10.0.0.2 on eth0\n1008-\tType: static univ\n0000'
    const { path: p } = await fakeBird((_cmd, send) => {
      let k = 0
      const tick = () => {
        if (k < reply.length) {
          send(reply.slice(k, k + 3))
          k += 3
          setTimeout(tick, 1)
        } else setTimeout(() => send(' \n'), 20)
      }
      tick()
    })
    const c = await connect(p)
    expect(await c.command('show route all')).toBe('Table master4:\n10.1.0.0/24          unicast [s 1] * (200)\n\tvia 10.0.0.2 on eth0\n\tType: static univ\n')
    expect(await c.commandRaw('show route all')).toBe(reply + ' \n')
  })

  it('sends one command at a time and pairs each reply with its command', async () => {
    let busy = false
    let overlapped = false
    const { path: p, seen } = await fakeBird((cmd, send) => {
      if (busy) overlapped = true
      busy = true
      setTimeout(() => {
        busy = false
        send(`1000-${cmd}\n0000 \n`)
      }, 15)
    })
    const c = await connect(p)
    const cmds = ['show status', 'show protocols all', 'show route all', 'show memory']
    const got = await Promise.all(cmds.map((x) => c.command(x)))
    expect(got).toEqual(cmds.map((x) => `${x}\n`))
    expect(seen).toEqual(cmds)
    expect(overlapped).toBe(false)
  })

  it('turns an 8xxx/9xxx reply into a BirdError with code, text and path, and stays usable', async () => {
    const { path: p } = await fakeBird((cmd, send) => send(cmd === 'show route bogus' ? '9001 syntax error, unexpected CF_SYM_UNDEFINED\n' : '0013 Daemon is up and running\n'))
    const c = await connect(p)
    const err = await c.command('show route bogus').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BirdError)
    expect(err).toBeInstanceOf(RouteDoctorError)
    expect((err as BirdError).birdCode).toBe(9001)
    expect((err as BirdError).text).toBe('syntax error, unexpected CF_SYM_UNDEFINED')
    expect((err as Error).message).toContain(p)
    expect(await c.commandRaw('show route bogus')).toBe('9001 syntax error, unexpected CF_SYM_UNDEFINED\n')
    expect(await c.command('show status')).toBe('Daemon is up and running\n')
  })

  it('rejects a command containing a newline (it would be two commands)', async () => {
    const { path: p, seen } = await fakeBird((_c, send) => send('0000 \n'))
    const c = await connect(p)
    await expect(c.command('show status\nshow route')).rejects.toThrow(/one line/)
    expect(seen).toEqual([])
  })

  it('times out when the server never greets', async () => {
    const { path: p } = await fakeBird(() => undefined, null)
    const t0 = Date.now()
    const err = await BirdSocket.connect(p, { timeoutMs: 300 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BirdTimeoutError)
    expect((err as Error).message).toContain(p)
    expect((err as Error).message).toMatch(/300 ms/)
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250)
  })

  it('times out when a command is never answered, naming the command, and refuses further commands', async () => {
    const { path: p } = await fakeBird((_cmd, send) => send('1000-partial\n'))
    const c = await connect(p, 300)
    const err = await c.command('show route all').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BirdTimeoutError)
    expect((err as Error).message).toContain(p)
    expect((err as Error).message).toContain('show route all')
    await expect(c.command('show status')).rejects.toBeInstanceOf(BirdTimeoutError)
  })

  it('keeps waiting while a slow reply is still streaming (the timeout is for silence)', async () => {
    const { path: p } = await fakeBird((_cmd, send) => {
      let k = 0
      const iv = setInterval(() => {
        if (++k < 8) send(`1007-line ${k}\n`)
        else {
          clearInterval(iv)
          send('0000 \n')
        }
      }, 60)
    })
    const c = await connect(p, 200)
    expect((await c.command('show route all')).split('\n')).toHaveLength(8)
  })

  it('reports BIRD closing the connection mid-reply', async () => {
    const p = path.join(dir, `closing${n++}.ctl`)
    const server = net.createServer((conn) => {
      conn.write('0001 BIRD 2.0.12 ready.\n')
      conn.on('data', () => conn.end('1007-half\n'))
    })
    servers.push(server)
    await new Promise<void>((r) => server.listen(p, r))
    const c = await connect(p)
    await expect(c.command('show route all')).rejects.toThrow(/closed the connection/)
  })
})

describe('BirdSocket connection errors', () => {
  it('names a missing socket path', async () => {
    const p = path.join(dir, 'nope', 'bird.ctl')
    const err = await BirdSocket.connect(p, { timeoutMs: 500 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BirdSocketMissingError)
    expect((err as Error).message).toContain(p)
    expect((err as RouteDoctorError).exit).toBe(2)
  })

  it('names a socket nobody listens on', async () => {
    const p = path.join(dir, 'stale.ctl')
    // A listener killed by SIGKILL leaves its socket file behind, as a crashed BIRD does.
    const r = spawnSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(p)}, () => process.kill(process.pid, 'SIGKILL'))`])
    expect(r.signal).toBe('SIGKILL')
    const err = await BirdSocket.connect(p, { timeoutMs: 500 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BirdSocketRefusedError)
    expect((err as Error).message).toContain(p)
    expect((err as Error).message).toContain('nothing listens on it')
  }, 10_000)

  it('names a path that is a file or directory, not a socket (--bird-socket given the config, say)', async () => {
    const file = path.join(dir, 'bird.conf')
    writeFileSync(file, 'router id 1.2.3.4;\n')
    for (const p of [file, dir]) {
      const err = await BirdSocket.connect(p, { timeoutMs: 500 }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(BirdSocketRefusedError)
      expect((err as Error).message).toBe(
        `BIRD control socket ${p} is not a socket but a file or directory ` +
          '(pass BIRD\'s socket, e.g. /var/run/calico/bird.ctl)',
      )
      expect((err as RouteDoctorError).exit).toBe(2)
    }
  })

  it.skipIf(process.getuid?.() === 0)('names a socket without permission (skipped as root: root bypasses file modes)', async () => {
    const { path: p } = await fakeBird(() => undefined)
    chmodSync(p, 0)
    const err = await BirdSocket.connect(p, { timeoutMs: 500 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(BirdSocketPermissionError)
    expect((err as Error).message).toContain(p)
  })
})

describe('findBirdSocket', () => {
  const cands = ['a.ctl', 'b.ctl', 'c.ctl'].map((f) => path.join(dir, 'find', f))

  it('prefers an explicit path, even one that does not exist', () => {
    expect(findBirdSocket('/nonexistent/bird.ctl', cands)).toBe('/nonexistent/bird.ctl')
  })

  it('takes the first candidate that exists, in order', () => {
    execFileSync('mkdir', ['-p', path.join(dir, 'find')])
    writeFileSync(cands[2]!, '')
    expect(findBirdSocket(undefined, cands)).toBe(cands[2])
    writeFileSync(cands[1]!, '')
    expect(findBirdSocket(undefined, cands)).toBe(cands[1])
    rmSync(path.join(dir, 'find'), { recursive: true })
  })

  it('lists every path tried when none exists', () => {
    const err = (() => {
      try {
        findBirdSocket(undefined, cands)
      } catch (e) {
        return e
      }
    })()
    expect(err).toBeInstanceOf(BirdSocketNotFoundError)
    for (const c of cands) expect((err as Error).message).toContain(c)
  })

  it('defaults to DESIGN §2 order', async () => {
    const { DEFAULT_BIRD_SOCKETS } = await import('../../src/collect/bird-socket.js')
    expect(DEFAULT_BIRD_SOCKETS).toEqual(['/var/run/calico/bird.ctl', '/run/bird/bird.ctl', '/var/run/bird/bird.ctl', '/run/bird.ctl'])
  })
})
