import path from 'node:path'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {authorize, isLoopback, listenText, parseListen} from '../../src/agent/server.js'
import {npdLine} from '../../src/render/npd.js'
import {BIN, FIXTURES} from '../helpers.js'

describe('check --npd (node-problem-detector custom plugin)', () => {
  it.each([
    ['lab-bird2-healthy', 0, /^ok: 5 prefixes, BGP 2\/2 Established$/],
    ['bird2-peer-down', 1, /not-tunneled \(192\.168\.110\.128\/26 …\); peer-down$/],
    ['bird2-ecmp-not-tunneled', 1, /not-tunneled/],
  ])('%s: exit %i and one line of at most 80 bytes', async (dir, exit, line) => {
    const r = await execa('node', [BIN, 'check', '--npd', '--from', path.join(FIXTURES, dir)], {reject: false})
    expect(r.exitCode).toBe(exit)
    expect(r.stdout.split('\n')).toHaveLength(1)
    expect(Buffer.byteLength(r.stdout)).toBeLessThanOrEqual(80)
    expect(r.stdout).toMatch(line)
  })

  // NPD cuts max_output_length in bytes (Go's output[:n]): a line of 80 characters with a `…` would lose the
  // ellipsis' last bytes and become invalid UTF-8 in the Node condition's message
  it('cuts a long line at 80 UTF-8 bytes on a character boundary, and makes an error\'s lines one', async () => {
    const long = await execa('node', [BIN, 'check', '--npd', '--from', `/nonexistent/${'x'.repeat(100)}`], {reject: false})
    expect(long.exitCode).toBe(3)
    expect(Buffer.byteLength(long.stdout)).toBe(80)
    expect(long.stdout).toMatch(/^unknown: \/nonexistent\/x+…$/)
    const wide = npdLine(`unknown: ${'→'.repeat(40)}`)
    expect(Buffer.byteLength(wide)).toBeLessThanOrEqual(80)
    expect(Buffer.from(wide).toString('utf8')).toBe(wide)
    expect(wide.endsWith('→…')).toBe(true)
    expect(npdLine('unknown: ip exited 2:\n  Error: x\n')).toBe('unknown: ip exited 2: Error: x')
  })

  it('says a bad flag on its one line as unknown (exit 3), where node-problem-detector shows it', async () => {
    const r = await execa('node', [BIN, 'check', '--npd', '--no-such-flag'], {reject: false})
    expect(r.exitCode).toBe(3)
    expect(r.stdout).toMatch(/^unknown: Nonexistent flag: --no-such-flag/)
    expect(r.stdout.split('\n')).toHaveLength(1)
  })

  it('says unknown (exit 3, not 0 or 1) when the input cannot be read', async () => {
    const r = await execa('node', [BIN, 'check', '--npd', '--from', '/nonexistent/snapshot'], {reject: false})
    expect(r.exitCode).toBe(3)
    expect(r.stdout).toMatch(/^unknown: \/nonexistent\/snapshot: no such snapshot directory or bundle$/)
  })
})

describe('--listen and the token', () => {
  it('parses ADDR:PORT, [ADDR]:PORT of either family and :PORT, and refuses the rest with a usage error', () => {
    expect(parseListen('0.0.0.0:21179')).toEqual({host: '0.0.0.0', port: 21179})
    expect(parseListen('[::1]:8080')).toEqual({host: '::1', port: 8080})
    expect(parseListen('[1.2.3.4]:80')).toEqual({host: '1.2.3.4', port: 80})
    expect(parseListen(':21179')).toEqual({host: '', port: 21179})
    // the started line's `serving http://…/metrics`: brackets for IPv6 alone, as a URL has them (the DaemonSet's
    // [$(HOST_IP)]:21179 on an IPv4 node is 10.0.0.1:21179 there)
    expect(['[10.0.0.1]:21179', '10.0.0.1:21179', '[fd00::1]:21179', ':21179'].map((t) => listenText(parseListen(t))))
      .toEqual(['10.0.0.1:21179', '10.0.0.1:21179', '[fd00::1]:21179', ':21179'])
    for (const bad of ['21179', 'localhost:80', '1.2.3.4:0', '1.2.3.4:65536', '1.2.3.4:x', '[localhost]:80', '[]:80',
      '::1:80', '[1.2.3.4:80']) {
      expect(() => parseListen(bad), bad).toThrow(/--listen .*expected ADDR:PORT/)
    }
  })

  it('lets loopback clients in, and others only with the right bearer token', () => {
    const token = Buffer.from('s3cret')
    expect(isLoopback('127.0.0.1')).toBe(true)
    expect(isLoopback('::ffff:127.0.0.2')).toBe(true)
    expect(isLoopback('::1')).toBe(true)
    expect(isLoopback('10.0.0.1')).toBe(false)
    expect(authorize('127.0.0.1', undefined, undefined)).toBeUndefined()
    expect(authorize('10.0.0.1', undefined, token)).toBe(401)
    expect(authorize('10.0.0.1', 'Bearer nope', token)).toBe(403)
    expect(authorize('10.0.0.1', 'Bearer s3cret', token)).toBeUndefined()
    expect(authorize('10.0.0.1', 'Bearer s3cret', undefined)).toBe(403)
    expect(authorize('10.0.0.1', undefined, undefined)).toBe(403)
  })
})

describe('watch: bad input exits 2 with a clear message before anything starts', () => {
  const watch = (...args: string[]) => execa('node', [BIN, 'watch', '--pool', '192.168.0.0/16', ...args], {reject: false, timeout: 20_000})

  it.each([
    [['--listen', 'nowhere'], /--listen nowhere: expected ADDR:PORT/],
    [['--listen', '127.0.0.1:99999'], /--listen 127\.0\.0\.1:99999: expected ADDR:PORT/],
    [['--interval', '0'], /--interval 0: expected a number of seconds greater than 0/],
    [['--interval', 'soon'], /--interval soon: expected a number of seconds/],
    [['--listen', '127.0.0.1:1', '--token-file', '/nonexistent/token'], /--token-file \/nonexistent\/token: cannot read \(ENOENT\)/],
    [['--from', 'examples/bird2-ecmp-not-tunneled'], /watch reads the live node/],
    // fix's --rule-priority, with fix's message
    [['--reconcile', '--rule-priority', '32766'], /--rule-priority 32766: expected 1-32765 \(below main's rule at 32766/],
    [['--rule-priority', '100'], /--rule-priority needs --reconcile/],
  ])('%j', async (args, message) => {
    const r = await watch(...args)
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toMatch(message)
    expect(r.stderr).not.toMatch(/\n\s+at /) // no stack
  })

  it('a port in use', async () => {
    const {createServer} = await import('node:net')
    const server = createServer()
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as {port: number}).port
    try {
      const r = await watch('--listen', `127.0.0.1:${port}`)
      expect(r.exitCode).toBe(2)
      expect(r.stderr).toMatch(`--listen 127.0.0.1:${port}: cannot listen: the port is in use`)
    } finally {
      server.close()
    }
  })
})
