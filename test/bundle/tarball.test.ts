// Support bundle archives: what `routedoctor bundle` writes, GNU tar can read, and what `--from` reads back.
import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {gunzipSync, gzipSync} from 'node:zlib'

import {afterAll, beforeAll, describe, expect, it} from 'vitest'

import {buildManifest} from '../../src/bundle/manifest.js'
import {redactBundleInput} from '../../src/bundle/redact.js'
import {readBundle, writeBundle, defaultBundleName, type BundleInput} from '../../src/bundle/tarball.js'
import {RouteDoctorError} from '../../src/model/errors.js'
import type {SourceFile} from '../../src/model/types.js'

const tmp = mkdtempSync(path.join(os.tmpdir(), 'rd-bundle-'))
afterAll(() => rmSync(tmp, {recursive: true, force: true}))
const FIX = path.resolve(__dirname, '../fixtures/bird2-ecmp-not-tunneled')
/** The bytes writeBundle writes for `input` (without spooling), and the manifest it returns. */
async function packed(input: BundleInput, name = 'packed'): Promise<{data: Buffer; manifest: Awaited<ReturnType<typeof writeBundle>>; file: string}> {
  const file = path.join(mkdtempSync(path.join(tmp, `${name}-`)), `${name}.tar.gz`)
  const manifest = await writeBundle(input, file, {spoolAt: 2 ** 40})
  return {data: readFileSync(file), manifest, file}
}
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex')
const hasTar = (() => {
  try {
    execFileSync('tar', ['--version'], {stdio: 'ignore'})
    return true
  } catch {
    return false
  }
})()

function sources(): SourceFile[] {
  const files: SourceFile[] = readdirSync(FIX)
    .filter((n) => n !== 'expected.json' && n !== 'bird.conf')
    .sort()
    .map((name, i) => ({name, text: readFileSync(path.join(FIX, name), 'utf8'), command: `cmd ${name}`, exitStatus: 0, durationMs: i * 3}))
  files.push({name: 'bird.conf', text: readFileSync(path.join(FIX, 'bird.conf'), 'utf8') + 'protocol bgp x from mesh { neighbor 10.9.9.9 as 1; password "t0p-secret"; }\n'})
  files.push({name: 'ip-rule.txt', text: 'CRLF line\r\nnon-ASCII: naïve → ✓\r\nno trailing newline'})
  files.push({name: 'ippools.json', error: 'no such file'})
  files.push({name: 'sysctl-partial.txt', text: 'net.ipv4.ip_forward = 1\n', error: 'permission denied on 2 keys', command: 'sysctl -a', exitStatus: 1})
  return files
}

function input(files = sources()): BundleInput {
  const manifest = buildManifest({files, tool: {name: 'routedoctor', version: '0.1.0'}, collectedAt: '2026-11-29T16:50:21.000Z', host: 'vm', command: ['bundle', '--redact'], redacted: false})
  return {files, model: {kernelRoutes: [{dst: '192.168.82.0/26'}], n: 3}, reportMd: '# Report\n\nall bad\n', reportJson: {schema: 1, prefixes: []}, manifest}
}

async function expectBundleError(file: string, pattern: RegExp): Promise<void> {
  const err = await readBundle(file).then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(RouteDoctorError)
  expect((err as RouteDoctorError).exit).toBe(2)
  expect((err as Error).message).toContain(file)
  expect((err as Error).message).toMatch(pattern)
}

describe('writeBundle / readBundle', () => {
  const out = path.join(tmp, 'b.tar.gz')
  const written = (async () => writeBundle(input(), out))()

  it.skipIf(!hasTar)('writes an archive GNU tar lists and extracts byte for byte', async () => {
    await written
    const list = execFileSync('tar', ['-tzf', out], {encoding: 'utf8'}).trim().split('\n')
    const want = ['manifest.json', 'snapshot/', 'model.json', 'report.md', 'report.json', 'snapshot/errors.json', ...sources().filter((f) => f.text !== undefined).map((f) => `snapshot/${f.name}`)]
    expect([...list].sort()).toEqual([...want].sort())
    const x = path.join(tmp, 'x')
    mkdirSync(x)
    execFileSync('tar', ['-xzf', out, '-C', x])
    for (const f of sources()) {
      if (f.text === undefined || f.name === 'bird.conf') continue
      expect(readFileSync(path.join(x, 'snapshot', f.name), 'utf8'), f.name).toBe(f.text)
    }
    // the manifest's checksums are those of the extracted files
    const manifest = JSON.parse(readFileSync(path.join(x, 'manifest.json'), 'utf8'))
    expect(manifest.files.length).toBe(want.length - 2)
    for (const m of manifest.files) expect(sha(readFileSync(path.join(x, m.path))), m.path).toBe(m.sha256)
    for (const s of manifest.sources) if (statSync(path.join(x, 'snapshot', s.file), {throwIfNoEntry: false})) expect(sha(readFileSync(path.join(x, 'snapshot', s.file)))).toBe(s.sha256)
    expect(JSON.parse(readFileSync(path.join(x, 'snapshot/errors.json'), 'utf8')).map((e: {file: string}) => e.file)).toEqual(['ippools.json', 'sysctl-partial.txt'])
  })

  it('removes BGP passwords from bird.conf, and only them', async () => {
    await written
    const b = await readBundle(out)
    const conf = b.files.find((f) => f.name === 'bird.conf')!.text!
    expect(conf).not.toContain('t0p-secret')
    expect(conf).toContain('password "<removed>"; }')
    expect(conf.replace('password "<removed>"', 'password "t0p-secret"')).toBe(sources().find((f) => f.name === 'bird.conf')!.text)
  })

  it('reads back the same files, manifest, model and reports', async () => {
    const manifest = await written
    const b = await readBundle(out)
    const want = sources().map((f) => (f.name === 'bird.conf' ? {...f, text: f.text!.replace('t0p-secret', '<removed>')} : f))
    expect(b.files).toEqual(want)
    expect(b.manifest).toEqual(manifest)
    expect(b.manifest.host).toBe('vm')
    expect(b.manifest.collectedAt).toBe('2026-11-29T16:50:21.000Z')
    expect(b.manifest.sources.find((s) => s.file === 'ippools.json')).toMatchObject({error: 'no such file', size: 0})
    expect(b.model).toEqual(input().model)
    expect(b.reportJson).toEqual(input().reportJson)
    expect(b.reportMd).toBe(input().reportMd)
    expect(b.warnings).toEqual([])
  })

  it('is deterministic for the same input', async () => {
    await written
    expect(readFileSync(out).equals((await packed(input())).data)).toBe(true)
  })

  it('spools members larger than the spool size to a file while they are made: the same bytes, no file left behind', async () => {
    const dir = mkdtempSync(path.join(tmp, 'spool-'))
    // a model of several chunks (Utf8Chunks hands over ~1 MiB at a time), with multi-byte text across them
    const big = {...input(), model: {routes: Array.from({length: 30_000}, (_, i) => ({dst: `10.${i >> 8 & 255}.${i & 255}.0/26`, note: i % 7 ? 'naïve → ✓'.repeat(9) : 'x'}))}}
    const whole = (await packed(big, 'unspooled')).data
    for (const spoolAt of [0, 1000, 2 ** 20 + 1]) {
      const p = path.join(dir, `s${spoolAt}.tar.gz`)
      await writeBundle(big, p, {spoolAt})
      expect(readFileSync(p).equals(whole), `spool at ${spoolAt}`).toBe(true)
      expect((await readBundle(p)).model).toEqual(big.model)
    }
    expect(readdirSync(dir).sort()).toEqual(['s0.tar.gz', 's1000.tar.gz', 's1048577.tar.gz'])
  })

  it('removes its spool file and temporary archive when making a member fails', async () => {
    const dir = mkdtempSync(path.join(tmp, 'spool-fail-'))
    const model = {first: 'y'.repeat(3 * 2 ** 20), get second(): string {
      // by now the first ~3 MiB were spooled
      if (readdirSync(dir).some((f) => f.endsWith('.model.json'))) throw new Error('the model broke')
      return 'spool file missing'
    }}
    const err = await writeBundle({...input(), model}, path.join(dir, 'b.tar.gz'), {spoolAt: 1000}).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RouteDoctorError)
    expect((err as Error).message).toMatch(/cannot write the bundle \(the model broke\)/)
    expect(readdirSync(dir)).toEqual([])
  })

  it('reads the same bundle whatever pieces the archive streams by in', async () => {
    await written
    const whole = await readBundle(out)
    for (const pieceSize of [1, 7, 511, 512, 513, 4096]) expect(await readBundle(out, {pieceSize}), `pieces of ${pieceSize}`).toEqual(whole)
  })

  it('writes a report given in pieces as the text they make', async () => {
    const pieces = ['# Report\n', '', 'naïve → ✓ ', 'x'.repeat(400_000), '\nend\n']
    const p = path.join(tmp, 'pieces.tar.gz')
    await writeBundle({...input(), reportMd: pieces.values()}, p)
    expect((await readBundle(p)).reportMd).toBe(pieces.join(''))
  })

  it('checksums but does not read a model or report over the read limit, and still replays', async () => {
    await written
    const b = await readBundle(out, {reportReadLimit: 30})
    expect(b.files).toEqual((await readBundle(out)).files)
    expect(b.model).toBeUndefined()
    expect(b.reportJson).toBeUndefined()
    expect(b.reportMd).toBe(input().reportMd) // 19 bytes: under the limit
    expect(b.warnings).toEqual([])
  })

  it.skipIf(!hasTar)('reads a bundle re-packed by GNU tar from its extracted folder', async () => {
    await written
    const dir = path.join(tmp, 'repack', 'routedoctor-vm-20261129-165021')
    mkdirSync(dir, {recursive: true})
    execFileSync('tar', ['-xzf', out, '-C', dir])
    const again = path.join(tmp, 'repacked.tar.gz')
    execFileSync('tar', ['-czf', again, '-C', path.dirname(dir), path.basename(dir)])
    expect((await readBundle(again)).files).toEqual((await readBundle(out)).files)
  })

  it.skipIf(!hasTar)('keeps long file names (pax) readable both ways', async () => {
    const long = `${'x'.repeat(120)}.txt`
    const p = path.join(tmp, 'long.tar.gz')
    await writeBundle(input([{name: long, text: 'long\n'}]), p)
    expect(execFileSync('tar', ['-tzf', p], {encoding: 'utf8'})).toContain(`snapshot/${long}\n`)
    expect((await readBundle(p)).files).toEqual([{name: long, text: 'long\n'}])
  })

  it.skipIf(!hasTar)('warns about a model edited after collection even when it is too large to read', async () => {
    await written
    const d = path.join(tmp, 'edit-model')
    mkdirSync(d)
    execFileSync('tar', ['-xzf', out, '-C', d])
    writeFileSync(path.join(d, 'model.json'), '{"edited": true}\n')
    const p = path.join(tmp, 'edited-model.tar.gz')
    execFileSync('tar', ['-czf', p, '-C', d, '.'])
    expect((await readBundle(p, {reportReadLimit: 4})).warnings).toEqual(['model.json does not match its sha256 in manifest.json'])
  })

  it.skipIf(!hasTar)('warns about a snapshot file edited after collection, and still reads it', async () => {
    await written
    const d = path.join(tmp, 'edit')
    mkdirSync(d)
    execFileSync('tar', ['-xzf', out, '-C', d])
    writeFileSync(path.join(d, 'snapshot', 'sysctl.txt'), 'net.ipv4.ip_forward = 0\n')
    const p = path.join(tmp, 'edited.tar.gz')
    execFileSync('tar', ['-czf', p, '-C', d, '.'])
    const b = await readBundle(p)
    expect(b.files.find((f) => f.name === 'sysctl.txt')!.text).toBe('net.ipv4.ip_forward = 0\n')
    expect(b.warnings).toEqual([expect.stringMatching(/snapshot\/sysctl\.txt does not match its sha256/)])
  })
})

describe('a redacted bundle', () => {
  it('carries no original address, MAC or host name in any member, and reads back consistently', async () => {
    const inp = input()
    inp.reportMd = '# vm\n192.168.110.128/26 via 172.31.20.5: not tunnelled\n'
    inp.model = {prefix: '192.168.110.128/26', neighbor: '172.31.20.5', protocol: 'Mesh_172_31_20_5', note: 'line\nvm'}
    inp.manifest.command = ['explain', '192.168.110.128/26', '--redact']
    const {input: red, mapping} = redactBundleInput(inp, {key: Buffer.from('k')})
    const {data, manifest, file} = await packed(red, 'red')
    const tar = gunzipSync(data).toString('latin1')
    for (const secret of ['172.31.20.5', '192.168.110.128', '172.31.11.1', 'f2:16:b0:6a:b7:24', 't0p-secret', 'Hostname is vm']) expect(tar, secret).not.toContain(secret)
    const n = mapping['172.31.20.5']
    expect(n).toMatch(/^\d+\.\d+\.\d+\.5$/)
    expect(manifest.redacted).toBe(true)
    expect(manifest.host).toBe(mapping.vm)
    expect(manifest.command).toEqual(['explain', `${mapping['192.168.110.128']}/26`, '--redact'])
    expect(red.model).toEqual({prefix: `${mapping['192.168.110.128']}/26`, neighbor: n, protocol: `Mesh_${n.replaceAll('.', '_')}`, note: `line\n${mapping.vm}`})
    expect(red.reportMd).toBe(`# ${mapping.vm}\n${mapping['192.168.110.128']}/26 via ${n}: not tunnelled\n`)
    const b = await readBundle(file)
    expect(b.files).toEqual(red.files)
    expect(b.warnings).toEqual([])
    // the mapping stays with the caller: no member holds an original next to its pseudonym
    expect(tar).not.toContain(JSON.stringify(mapping).slice(1, 30))
  })
})

describe('readBundle rejects', () => {
  let good: Buffer
  beforeAll(async () => {
    good = (await packed(input(), 'good')).data
  })

  it('a truncated archive, naming the file', async () => {
    for (const cut of [1, 10, Math.floor(good.length / 2), good.length - 9, good.length - 1]) {
      const p = path.join(tmp, `trunc-${cut}.tar.gz`)
      writeFileSync(p, good.subarray(0, cut))
      await expectBundleError(p, /truncated|corrupt|not gzip/)
    }
  })

  it('a tar cut short inside an intact gzip stream', async () => {
    const tar = gunzipSync(good)
    for (const cut of [512 * 3, tar.length - 1024 - 512, tar.length - 700]) {
      const p = path.join(tmp, `tartrunc-${cut}.tar.gz`)
      writeFileSync(p, gzipSync(tar.subarray(0, cut)))
      await expectBundleError(p, /truncated tar archive/)
    }
  })

  it('a corrupted archive', async () => {
    const bad = Buffer.from(good)
    bad[Math.floor(bad.length / 2)] ^= 0xff
    const p = path.join(tmp, 'flipped.tar.gz')
    writeFileSync(p, bad)
    await expectBundleError(p, /corrupt/)
  })

  it('random bytes, and a plain file that is not gzip', async () => {
    const p = path.join(tmp, 'random.tar.gz')
    writeFileSync(p, Buffer.from(Array.from({length: 4096}, (_, i) => (i * 7919 + 13) % 251)))
    await expectBundleError(p, /not gzip-compressed/)
    const q = path.join(tmp, 'snapshot.txt')
    writeFileSync(q, 'hello\n')
    await expectBundleError(q, /not gzip-compressed/)
  })

  it('gzip data that is not a tar archive', async () => {
    const p = path.join(tmp, 'notar.tar.gz')
    writeFileSync(p, gzipSync(Buffer.from('x'.repeat(2000))))
    await expectBundleError(p, /: the gzip data is not a tar archive \(expected a \.tar\.gz written by `routedoctor bundle`\)/)
    // shorter than one tar header (a gzipped text file), and empty
    for (const [name, data] of [['short.tar.gz', 'hello\n'], ['empty.tar.gz', '']]) {
      const q = path.join(tmp, name)
      writeFileSync(q, gzipSync(Buffer.from(data)))
      await expectBundleError(q, /: the gzip data is not a tar archive/)
    }
  })

  it('a member too large to hold, before reading its data', async () => {
    // a ustar header alone, for a 2 GiB snapshot file: refused at the header, nothing buffered
    const h = Buffer.alloc(512)
    h.write('snapshot/big.txt', 0)
    h.write('0000644\0', 100)
    h.write(`${(2 ** 31).toString(8).padStart(11, '0')}\0`, 124)
    h.write('0', 156)
    h.write('ustar\0', 257)
    h.write('00', 263)
    h.write('        ', 148)
    let sum = 0
    for (const b of h) sum += b
    h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148)
    const p = path.join(tmp, 'huge-member.tar.gz')
    writeFileSync(p, gzipSync(h))
    await expectBundleError(p, /snapshot\/big\.txt is 2048 MiB, more than routedoctor reads/)
  })

  it('a missing file', async () => {
    await expectBundleError(path.join(tmp, 'nope.tar.gz'), /no such file/)
  })

  it.skipIf(!hasTar)('a tarball without manifest.json or without snapshot/', async () => {
    const d = path.join(tmp, 'partial')
    mkdirSync(path.join(d, 'snapshot'), {recursive: true})
    writeFileSync(path.join(d, 'snapshot', 'sysctl.txt'), 'a = 1\n')
    writeFileSync(path.join(d, 'model.json'), '{}')
    const p = path.join(tmp, 'nomanifest.tar.gz')
    execFileSync('tar', ['-czf', p, '-C', d, 'snapshot', 'model.json'])
    await expectBundleError(p, /manifest\.json is missing/)
    writeFileSync(path.join(d, 'manifest.json'), JSON.stringify(input().manifest))
    const q = path.join(tmp, 'nosnapshot.tar.gz')
    execFileSync('tar', ['-czf', q, '-C', d, 'manifest.json', 'model.json'])
    await expectBundleError(q, /snapshot\/ folder is missing/)
    writeFileSync(path.join(d, 'manifest.json'), '{"schema": 7, "sources": []}')
    const r = path.join(tmp, 'schema7.tar.gz')
    execFileSync('tar', ['-czf', r, '-C', d, 'manifest.json', 'snapshot'])
    await expectBundleError(r, /schema 7/)
  })

  it.skipIf(!hasTar)('entries that escape the folder: ../ and absolute paths', async () => {
    const d = path.join(tmp, 'evil', 'inner')
    mkdirSync(path.join(d, 'snapshot'), {recursive: true})
    writeFileSync(path.join(d, 'manifest.json'), JSON.stringify(input().manifest))
    writeFileSync(path.join(d, 'snapshot', 'sysctl.txt'), 'a = 1\n')
    writeFileSync(path.join(tmp, 'evil', 'outside.txt'), 'boom\n')
    const p = path.join(tmp, 'traversal.tar.gz')
    // -P keeps `../` and leading `/` in the member names, as a hostile archive would have them
    execFileSync('tar', ['-czPf', p, 'manifest.json', 'snapshot', '../outside.txt'], {cwd: d})
    expect(execFileSync('tar', ['-tzPf', p], {encoding: 'utf8'})).toContain('../outside.txt')
    await expectBundleError(p, /unsafe entry path "\.\.\/outside\.txt".*traversal/)
    const q = path.join(tmp, 'absolute.tar.gz')
    execFileSync('tar', ['-czPf', q, 'manifest.json', 'snapshot', path.join(tmp, 'evil', 'outside.txt')], {cwd: d})
    await expectBundleError(q, /unsafe entry path ".*outside\.txt".*absolute/)
  })
})

describe('defaultBundleName', () => {
  it('is routedoctor-HOST-YYYYMMDD-HHMMSS.tar.gz in UTC', () => {
    expect(defaultBundleName('vm', new Date('2026-11-29T16:05:09Z'))).toBe('routedoctor-vm-20261129-160509.tar.gz')
    expect(defaultBundleName('node-1.example.com', new Date('2026-01-02T03:04:05.678Z'))).toBe('routedoctor-node-1.example.com-20260102-030405.tar.gz')
  })

  it('keeps odd host names from making a path', () => {
    const n = defaultBundleName('../etc/x y', new Date('2026-01-02T03:04:05Z'))
    expect(n).not.toContain('/')
    expect(n).toMatch(/^routedoctor-[A-Za-z0-9._-]+-20260102-030405\.tar\.gz$/)
    expect(defaultBundleName('', new Date(0))).toBe('routedoctor-unknown-19700101-000000.tar.gz')
  })
})
