// The streamed presenters of `check`: the same output as the materialised report, and no limit
// tied to the number of prefixes (a million-prefix table once overflowed the stack in renderCheck).
import {mkdtempSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {PassThrough} from 'node:stream'
import {Chalk} from 'chalk'
import {describe, expect, it} from 'vitest'

import fc from 'fast-check'

import {generateSnapshot} from '../../bench/gen-snapshot.mjs'
import {checkLineJson, jsonPieces, prefixLineJson, writeJson, writeLines} from '../../src/render/json.js'
import {buildBulkSnapshot} from '../../src/bulk/build.js'
import {keyPrefix, networkKey} from '../../src/model/prefix-key.js'
import {renderCheck, renderCheckLines} from '../../src/render/text.js'
import {checkReport, checkRun, isBulkHealthyPrefixes, type CheckReport, type PrefixLine} from '../../src/report/report.js'
import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import {FIXTURES} from '../helpers.js'

const snapshotIndexOf = async (dir: string) => new SnapshotIndex(buildSnapshot(await readSnapshotDir(dir)))

const plain = new Chalk({level: 0})

async function collect(write: (out: PassThrough) => Promise<void>): Promise<string> {
  const out = new PassThrough()
  const chunks: Buffer[] = []
  out.on('data', (c: Buffer) => chunks.push(c))
  await write(out)
  out.end()
  return Buffer.concat(chunks).toString('utf8')
}

function syntheticReport(n: number): CheckReport {
  const prefixes: PrefixLine[] = []
  for (let i = 0; i < n; i++) {
    const verdict = i % 3 === 0 ? 'not-tunneled' : 'ok'
    prefixes.push({prefix: `10.${(i >> 10) & 255}.${(i >> 2) & 255}.${(i & 3) * 64}/26`, verdict, findings: [], plan: null})
  }
  return {
    schema: 1,
    node: {sessions: {up: 1, total: 1}, tunnelDev: 'tunl0', pools: [{cidr: '10.0.0.0/8', mode: 'ipip', origin: 'flag'}], poolOrigin: 'flag', missing: [], failed: [], bundleWarnings: []},
    prefixes, host: {findings: []},
    summary: {prefixes: n, verdicts: {}, errors: 0, warnings: 0, exitCode: 0},
  }
}

describe('streamed check output', () => {
  it('text: a run streamed line by line equals the materialised report, broken prefixes first', async () => {
    const dir = `${FIXTURES}/bird2-ecmp-not-tunneled`
    const whole = renderCheck(checkReport(await snapshotIndexOf(dir)), plain)
    const run = checkRun(await snapshotIndexOf(dir))
    const streamed = await collect((out) => writeLines(out, renderCheckLines(run, plain)))
    expect(streamed).toBe(`${whole}\n`)
    const rows = whole.split('\n').filter((l) => /^\d+\.\d+\.\d+\.\d+\/\d+\s/.test(l))
    const rank = (l: string) => (/\s(local|not-in-pool)(\s|$)/.test(l) ? 3 : /\sok(\s|$)/.test(l) ? 2 : 1)
    expect(rows.length).toBeGreaterThan(2)
    expect(rows.map(rank)).toEqual(rows.map(rank).sort())
    expect(rank(rows[0])).toBe(1)
    // rows without findings end at their verdict: no line ends in spaces
    expect(rows.filter((l) => /\s(local|ok)$/.test(l)).length).toBeGreaterThan(0)
    expect(whole.split('\n').filter((l) => / $/.test(l))).toEqual([])
  })

  it('json: a run written as it is diagnosed is the JSON of the materialised report, summary included', async () => {
    const dir = `${FIXTURES}/bird2-ecmp-not-tunneled`
    const report = checkReport(await snapshotIndexOf(dir))
    const run = checkRun(await snapshotIndexOf(dir))
    const text = await collect((out) =>
      writeJson(out, {
        schema: run.schema,
        node: run.node,
        prefixes: run.prefixes,
        host: run.host,
        summary: run.summary,
      }),
    )
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(report)))
    expect(report.summary.errors).toBeGreaterThan(0)
  })

  it("json and text: check's lines, bulk-healthy prefixes written from their keys in runs, are byte for byte the rules' report", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rd-stream-'))
    try {
      await generateSnapshot(1200, dir)
      const files = await readSnapshotDir(dir)
      const rules = checkReport(new SnapshotIndex(buildSnapshot(files)))
      const bulk = () => checkRun(new SnapshotIndex(buildBulkSnapshot([...files], {}, 'check')))
      const run = bulk()
      const lines = [...run.lines]
      // most of the table is separated, in runs of several prefixes, between the broken ones
      const separated = lines.filter(isBulkHealthyPrefixes)
      expect(separated.length).toBeGreaterThan(100)
      expect(separated.reduce((n, l) => n + l.to - l.from, 0)).toBeGreaterThan(rules.prefixes.length / 2)
      expect(separated.some((l) => l.to - l.from > 1)).toBe(true)
      const fresh = bulk()
      const fast = await collect((out) =>
        writeJson(
          out,
          {schema: fresh.schema, node: fresh.node, prefixes: fresh.lines, host: fresh.host, summary: fresh.summary},
          {prefixes: checkLineJson},
        ),
      )
      expect(fast).toBe(await collect((out) => writeJson(out, {...rules, summary: rules.summary})))
      expect(await collect((out) => writeLines(out, renderCheckLines(bulk(), plain)))).toBe(
        `${renderCheck(rules, plain)}\n`,
      )
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('a long stretch of bulk-healthy prefixes comes in runs of at most 4096 keys, every key once and in order', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'rd-runs-'))
    try {
      await generateSnapshot(300, dir)
      const separated = buildBulkSnapshot(await readSnapshotDir(dir), {}, 'check')
      // 10k bulk-healthy keys past every pool prefix's (192.0.0.0/26 on): one stretch, written after the last of them
      const keys = Float64Array.from({length: 10_000}, (_, i) => networkKey(0xc0000000 + i * 64, 26))
      const ctx = () => new SnapshotIndex({...separated, healthy: {keys, bgpNextHops: separated.healthy!.bgpNextHops}})
      const runs = [...checkRun(ctx()).lines].filter(isBulkHealthyPrefixes)
      expect(runs.map((r) => r.to - r.from)).toEqual([4096, 4096, 1808])
      const seen = runs.flatMap((r) => [...r.keys.subarray(r.from, r.to)])
      expect(seen).toEqual([...keys])
      const lines = [...checkRun(ctx()).prefixes]
      expect(lines.slice(-keys.length).map((l) => l.prefix)).toEqual([...keys].map((k) => keyPrefix(k)))
      // the bulk-healthy rows, written by bytes, end at their verdict as every row without findings does
      const text = [...renderCheckLines(checkRun(ctx()), plain)].join('\n').split('\n')
      expect(text.filter((l) => l.startsWith(`${keyPrefix(keys[0])} `))).toEqual([`${keyPrefix(keys[0]).padEnd(20)}ok`])
      expect(text.filter((l) => / $/.test(l))).toEqual([])
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('json: check lines written by prefixLineJson are byte for byte what JSON.stringify writes', async () => {
    const dir = `${FIXTURES}/bird2-ecmp-not-tunneled`
    const report = checkReport(await snapshotIndexOf(dir))
    const run = checkRun(await snapshotIndexOf(dir))
    const value = () => ({
      schema: run.schema,
      node: run.node,
      prefixes: run.prefixes,
      host: run.host,
      summary: run.summary,
    })
    const fast = await collect((out) => writeJson(out, value(), {prefixes: prefixLineJson}))
    const plainJson = await collect((out) => writeJson(out, {...report, summary: report.summary}))
    expect(fast).toBe(plainJson)
    expect(report.prefixes.some((l) => l.findings.length > 0 && l.plan !== null)).toBe(true)
    // any line: odd text in every string, findings and plans or none
    const text = fc.string({unit: 'binary'})
    const line = fc.record({
      prefix: text,
      verdict: fc.constantFrom('ok', 'not-tunneled', 'missing', 'local'),
      findings: fc.array(
        fc.record({
          id: text,
          severity: text,
          title: text,
          detail: text,
          evidence: fc.array(fc.record({file: text, line: fc.nat(), endLine: fc.nat(), text})),
        }),
        {maxLength: 3},
      ),
      plan: fc.option(
        fc.record({
          dst: text,
          table: text,
          tableId: fc.nat(),
          metric: fc.nat(),
          protocol: text,
          nexthops: fc.array(fc.record({gateway: text, dev: text, onlink: fc.boolean(), weight: fc.nat()})),
        }),
        {nil: null},
      ),
    })
    fc.assert(fc.property(line, (l) => prefixLineJson(l as unknown as PrefixLine) === JSON.stringify(l)))
  })

  it('text: lines are written as UTF-8, whole, across chunk boundaries and pieces larger than a chunk', async () => {
    // pieces of every size around the 1 MiB chunk (a third of it is where a piece goes on its own),
    // with multi-byte characters and surrogate pairs that would be cut by a write at the wrong byte
    const unit = fc.constantFrom('a', 'é', '€', '😀', '\n', '"')
    const piece = fc.oneof(
      fc.string({unit, maxLength: 40}),
      fc.integer({min: 300_000, max: 1_100_000}).chain((n) => unit.map((u) => u.repeat(Math.ceil(n / u.length)))),
    )
    await fc.assert(fc.asyncProperty(fc.array(piece, {maxLength: 12}), async (lines) => {
      const text = await collect((out) => writeLines(out, lines))
      expect(text).toBe(lines.map((l) => `${l}\n`).join(''))
    }), {numRuns: 25})
  })

  it('text: a stream that asks to wait gets every byte, in order, once drained', async () => {
    // a reader far slower than the writer: writeLines must wait for 'drain' rather than buffer it all
    const out = new PassThrough({highWaterMark: 1024})
    const chunks: Buffer[] = []
    let waited = 0
    const origOnce = out.once.bind(out)
    out.once = ((event: string, fn: (...args: unknown[]) => void) => {
      if (event === 'drain') waited++
      return origOnce(event, fn)
    }) as typeof out.once
    const reader = (async () => {
      for await (const c of out) {
        chunks.push(c as Buffer)
        await new Promise((resolve) => setImmediate(resolve))
      }
    })()
    const lines = Array.from({length: 60_000}, (_, i) => `10.${i >> 8}.${i & 255}.0/26 ok ${'x'.repeat(i % 50)}`)
    await writeLines(out, lines)
    out.end()
    await reader
    expect(waited).toBeGreaterThan(0)
    expect(Buffer.concat(chunks).toString('utf8')).toBe(lines.map((l) => `${l}\n`).join(''))
  })

  it('json pieces: the same value as JSON.stringify gives, a big array an element per line', () => {
    const joined = (v: unknown) => {
      const out: string[] = []
      jsonPieces(v, (t) => out.push(t))
      return out.join('')
    }
    // what JSON.stringify drops or turns into null: undefined, functions, symbols; and toJSON
    const odd = fc.constantFrom(undefined, () => 1, Symbol('s'), new Date(0), {toJSON: () => ({made: 'by toJSON'})})
    const value = fc.letrec((tie) => ({
      leaf: fc.oneof(fc.jsonValue(), odd),
      node: fc.oneof({depthSize: 'small'}, tie('leaf'), fc.array(tie('node'), {maxLength: 5}), fc.dictionary(fc.string(), tie('node'), {maxKeys: 5})),
    })).node
    fc.assert(fc.property(value, (v) => {
      const text = joined(v)
      expect(text.endsWith('\n')).toBe(true)
      expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(v) ?? 'null'))
    }), {numRuns: 300})
    // the model's shape: its routes a line each, however many
    const model = {origin: {kind: 'dir'}, kernelRoutes: [{dst: '10.0.0.0/26', nexthops: [{dev: 'tunl0'}]}, {dst: '10.0.0.64/26'}], bird: {routes: [{prefix: 'a'}, {prefix: 'b'}], status: {version: '2.0.12'}}}
    const lines = joined(model).split('\n')
    expect(lines).toContain('    {"dst":"10.0.0.0/26","nexthops":[{"dev":"tunl0"}]},')
    expect(lines).toContain('      {"prefix":"b"}')
    expect(lines).toContain('    "status": {"version":"2.0.12"}')
  })

  it('json: an empty iterable is an empty array, and a thunk is called when its key is reached', async () => {
    let consumed = 0
    function* items() {
      consumed++
      yield* []
    }
    const text = await collect((out) => writeJson(out, {a: items(), b: () => consumed}))
    expect(JSON.parse(text)).toEqual({a: [], b: 1})
  })

  it('text: a million prefixes render without a stack overflow, errors first', () => {
    const report = syntheticReport(1_000_000)
    const lines = renderCheck(report, plain).split('\n')
    const rows = lines.filter((l) => l.startsWith('10.'))
    expect(rows).toHaveLength(1_000_000)
    expect(rows[0]).toContain('not-tunneled')
    expect(rows[333_334]).toMatch(/\sok\s*$/)
  })
})
