// The start-up chunk's V8 code cache (src/runtime/code-cache.ts, scripts/bundle.mjs, scripts/code-cache.mjs).
// Each load runs in a fresh Node process: V8's in-process compilation cache would hide what the file cache does.
import {execFileSync, spawnSync} from 'node:child_process'
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'
import {pathToFileURL} from 'node:url'

import {describe, expect, it} from 'vitest'

import {BIN, ROOT, tempDir} from '../helpers.js'

const LOADER = pathToFileURL(path.join(ROOT, 'dist/runtime/code-cache.js')).href
const EXAMPLE = path.join(ROOT, 'examples/bird2-ecmp-not-tunneled')

/** Loads `file` through the loader in a child; `record` writes its cache afterwards. */
function load(file: string, {record = false, env = {}}: {record?: boolean; env?: Record<string, string>} = {}) {
  const script = `
    const {loadCommonJs, codeCacheStates, writeCodeCaches} = await import(${JSON.stringify(LOADER)})
    const m = loadCommonJs(new URL(${JSON.stringify(pathToFileURL(file).href)}))
    const out = {answer: m.answer(), helper: m.helper, file: m.file, esm: (await m.later()).x, bare: typeof (await m.bare()).join, state: codeCacheStates()[0].state}
    if (${record}) writeCodeCaches()
    console.log(JSON.stringify(out))`
  return JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], {encoding: 'utf8', env: {...process.env, ROUTEDOCTOR_NO_CODE_CACHE: '', ...env}}))
}

function module(dir: string, answer = 42): string {
  writeFileSync(path.join(dir, 'helper.cjs'), 'exports.name = "helper"\n')
  writeFileSync(path.join(dir, 'esm.mjs'), 'export const x = "esm"\n')
  const file = path.join(dir, 'mod.cjs')
  writeFileSync(file, [
    'const {name} = require("./helper.cjs")',
    `exports.answer = function answer() { return ${answer} }`,
    'exports.helper = name',
    'exports.file = __filename',
    'exports.later = () => __import("./esm.mjs")',
    'exports.bare = () => __import("node:path")',
    '',
  ].join('\n'))
  return file
}

describe('loadCommonJs', () => {
  it('runs a CommonJS file as require would, with __import resolving against the file, and compiles it without a cache', () => {
    const file = module(tempDir('rd-cc-'))
    expect(load(file)).toEqual({answer: 42, helper: 'helper', file, esm: 'esm', bare: 'function', state: 'absent'})
  })

  it('uses the cache it recorded, and ignores it for other bytes of the same length, for data V8 refuses, and when told to', () => {
    const dir = tempDir('rd-cc-')
    const file = module(dir)
    load(file, {record: true})
    const cache = readFileSync(`${file}.cache`)
    expect(cache.subarray(0, 4).toString('latin1')).toBe('CCDR') // "RDCC" little-endian
    expect(load(file).state).toBe('accepted')
    expect(load(file, {env: {ROUTEDOCTOR_NO_CODE_CACHE: '1'}}).state).toBe('absent')

    // V8 checks only the length: a same-length edit must not run the recorded bytecode
    module(dir, 43)
    expect(load(file)).toMatchObject({answer: 43, state: 'stale'})

    module(dir, 42)
    const broken = Buffer.from(cache)
    for (let i = 12; i < broken.length; i++) broken[i] ^= 0x5a
    writeFileSync(`${file}.cache`, broken)
    expect(load(file)).toMatchObject({answer: 42, esm: 'esm', state: 'rejected'})
  })
})

describe('the built CLI', () => {
  const startup = readdirSync(path.join(ROOT, 'dist/app/chunks')).filter((f) => /^startup-.*\.cjs$/.test(f))

  it('loads its start-up chunk through a cache the build recorded and this Node accepts', () => {
    expect(startup).toHaveLength(1)
    const script = `const {codeCacheStates} = await import(${JSON.stringify(LOADER)}); await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/app/cli.js')).href)}); console.log(JSON.stringify(codeCacheStates()))`
    const states = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], {encoding: 'utf8', env: {...process.env, ROUTEDOCTOR_NO_CODE_CACHE: ''}}))
    expect(states).toEqual([{file: path.join(ROOT, 'dist/app/chunks', startup[0]), state: 'accepted'}])
    // every import() of the chunk goes through __import (a plain import() in a vm.Script fails)
    expect(readFileSync(path.join(ROOT, 'dist/app/chunks', startup[0]), 'utf8')).toMatch(/__import\("\.\/fix-[\w-]+\.js"\)/)
  })

  it('loads yaml, for an IPPool file in YAML, through the same loader and a cache it accepts', () => {
    const script = `
      const {codeCacheStates} = await import(${JSON.stringify(LOADER)})
      const {run} = await import(${JSON.stringify(pathToFileURL(path.join(ROOT, 'dist/app/cli.js')).href)})
      process.argv = [process.argv[0], ${JSON.stringify(BIN)}, 'check', '--json', '--from', ${JSON.stringify(EXAMPLE)}]
      await run(${JSON.stringify(pathToFileURL(BIN).href)})
      process.stderr.write(JSON.stringify(codeCacheStates()))`
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {encoding: 'utf8', env: {...process.env, ROUTEDOCTOR_NO_CODE_CACHE: ''}})
    expect(JSON.parse(r.stdout).summary.prefixes).toBeGreaterThan(0) // the example's pools come from its ippools.yaml
    expect(JSON.parse(r.stderr)).toEqual([
      {file: path.join(ROOT, 'dist/app/chunks', startup[0]), state: 'accepted'},
      {file: path.join(ROOT, 'dist/app/lazy/yaml.cjs'), state: 'accepted'},
    ])
  })

  it.each([
    ['check', '--json', '--from', EXAMPLE],
    ['explain', '192.168.110.130', '--from', EXAMPLE],
    ['fix', '--json', '--from', EXAMPLE],
    ['check', '--from', path.join(EXAMPLE, 'missing')],
  ])('prints the same with and without the cache: %s %s', (...args) => {
    const run = (noCache: string) => spawnSync(process.execPath, [BIN, ...args], {encoding: 'utf8', env: {...process.env, ROUTEDOCTOR_NO_CODE_CACHE: noCache, NO_COLOR: '1'}})
    const cached = run('')
    const compiled = run('1')
    expect(cached.stdout.length + cached.stderr.length).toBeGreaterThan(0)
    expect({status: cached.status, stdout: cached.stdout, stderr: cached.stderr}).toEqual({
      status: compiled.status,
      stdout: compiled.stdout,
      stderr: compiled.stderr,
    })
  })
})
