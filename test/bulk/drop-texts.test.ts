// check lets go of a full table's texts once separated (bulk/drop-texts.ts): what it keeps must be what the
// texts said — every cited line, every field and attribute of the routes still held — and the texts must
// really be gone (no field left a view into them).
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import path from 'node:path'

import {execa} from 'execa'
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'

import {generateSnapshot} from '../../bench/gen-snapshot.mjs'
import {readSnapshotDir} from '../../src/collect/snapshot-dir.js'
import {buildSnapshot} from '../../src/snapshot/build.js'
import {SnapshotIndex} from '../../src/model/snapshot-index.js'
import type {Snapshot, SourceFile} from '../../src/model/types.js'
import {buildBulkSnapshot} from '../../src/bulk/build.js'
import {ROOT, scenarioDirs, tempDir} from '../helpers.js'
import {toRawSocket} from '../parse-bird/captures.js'

const BIRD = 'birdc-show-route-all.txt'

/** Each of `held`, in order, is an element of `all` (JSON-equal, in the same order): a subsequence. */
function subsequence(all: unknown[], held: unknown[]): string | undefined {
  const texts = all.map((x) => JSON.stringify(x))
  let j = 0
  for (const x of held) {
    const s = JSON.stringify(x)
    while (j < texts.length && texts[j] !== s) j++
    if (j === texts.length) return s
    j++
  }
  return undefined
}

function bothWays(files: SourceFile[]): {plain: Snapshot; dropped: Snapshot} {
  return {plain: buildSnapshot(files), dropped: buildBulkSnapshot(files.map((f) => ({...f})), {}, 'check')}
}

async function syntheticFiles(routes: number, broken = false): Promise<SourceFile[]> {
  const dir = tempDir('rd-drop-texts-')
  await generateSnapshot(routes, dir, {broken})
  return readSnapshotDir(dir)
}

describe('dropping the texts of a separated snapshot', () => {
  it('keeps every route it still holds as parsed: fields, next hops, attributes, positions', async () => {
    const dirs = [...scenarioDirs()]
    const snapshots = [...await Promise.all(dirs.map((d) => readSnapshotDir(d))), await syntheticFiles(400)]
    for (const files of snapshots) {
      const {plain, dropped} = bothWays(files)
      expect(dropped.files.find((f) => f.name === BIRD)?.text ?? '').toBe('')
      expect(subsequence(plain.bird.routes, dropped.bird.routes)).toBeUndefined()
      expect(dropped.bird.routes.map((r) => r.attributes)).toEqual(
        plain.bird.routes
          .filter((r) => dropped.bird.routes.some((h) => h.pos.line === r.pos.line))
          .map((r) => r.attributes),
      )
      expect(subsequence(plain.kernelRoutes, dropped.kernelRoutes)).toBeUndefined()
    }
  })

  it('does the same on a dump framed as BIRD\'s control socket sends it (reply codes before the lines)', async () => {
    const files = await syntheticFiles(400)
    for (const fresh of [(i: number) => i === 0, (i: number) => i % 3 === 0]) {
      const framed = files.map((f) => (f.name === BIRD ? {...f, text: toRawSocket(f.text!, fresh)} : f))
      const {plain, dropped} = bothWays(framed)
      expect(dropped.bird.routes.length).toBeGreaterThan(50)
      expect(subsequence(plain.bird.routes, dropped.bird.routes)).toBeUndefined()
      expect(dropped.bird.routes.map((r) => r.attributes)).toEqual(
        plain.bird.routes
          .filter((r) => dropped.bird.routes.some((h) => h.pos.line === r.pos.line))
          .map((r) => r.attributes),
      )
      const full = new SnapshotIndex(plain)
      const kept = new SnapshotIndex(dropped)
      for (const r of dropped.bird.routes) expect(kept.cite(r.pos)).toEqual(full.cite(r.pos))
    }
  })

  // broken-heavy: 40% of the blocks broken, their paths nearly half of BIRD's text, which is then kept whole
  it.each([
    ['mostly healthy', false],
    ['broken-heavy', true],
  ])('cites any lines of a held route as the text had them, and refuses lines it did not keep (%s)', async (_, broken) => {
    const files = await syntheticFiles(400, broken)
    const {plain, dropped} = bothWays(files)
    const full = new SnapshotIndex(plain)
    const kept = new SnapshotIndex(dropped)
    expect(dropped.bird.routes.length).toBeGreaterThan(50)
    const blocks = dropped.bird.routes.map((r) => r.pos)
    fc.assert(fc.property(fc.nat(), fc.nat(), fc.nat(), (k, a, b) => {
      const {line, endLine} = blocks[k % blocks.length]
      const from = line + (a % (endLine - line + 1))
      const to = from + (b % (endLine - from + 1))
      expect(kept.cite({file: BIRD, line: from, endLine: to})).toEqual(full.cite({file: BIRD, line: from, endLine: to}))
    }), {numRuns: 300})
    // a line of a prefix reported in bulk (not held): not kept, and said so rather than cited wrong
    const held = new Set(dropped.bird.routes.map((r) => r.pos.line))
    const separated = plain.bird.routes.find((r) => !held.has(r.pos.line))!
    expect(() => kept.cite(separated.pos)).toThrow(/not kept/)
  })

  it.each([
    ['as generated', undefined],
    // node addresses of 13 characters or more (172.201.R.H): V8 makes such substrings views, not copies
    ['with longer node addresses', (text: string) => text.replaceAll('172.20.', '172.201.')],
    // most of the table outside the pool: the kernel's routes there are deferred, and those that resolve next hops
    // (the underlay, through ToRs at longer addresses) built after the text is gone, from next-hop lists copied off it
    ['with the pool holding two thirds of the table, and longer ToR addresses', (text: string) =>
      text.replace('cidr: 10.0.0.0/8', 'cidr: 10.0.0.0/11').replaceAll('172.31.1', '172.231.11')],
  ])('lets the texts go: no field of what it holds keeps a view into them (%s)', async (_, rewrite) => {
    const dir = tempDir('rd-drop-texts-mem-')
    await generateSnapshot(50_000, dir)
    if (rewrite) for (const name of readdirSync(dir)) writeFileSync(path.join(dir, name), rewrite(readFileSync(path.join(dir, name), 'latin1')), 'latin1')
    // in a process of its own, where a full collection can be asked for: external memory (the texts are
    // external strings) before and after loading as check does
    const script = `
      const {loadCheckIndex} = await import(${JSON.stringify(new URL('../../dist/services/load.js', import.meta.url).href)})
      const {readSnapshotDir} = await import(${JSON.stringify(new URL('../../dist/collect/snapshot-dir.js', import.meta.url).href)})
      const size = (await readSnapshotDir(process.argv[1])).reduce((n, f) => n + (f.text?.length ?? 0), 0)
      const ctx = await loadCheckIndex({from: process.argv[1]})
      // a text can outlive the load by a tick (seen: 1 run in 12 held BIRD's, freed by the next collection after it)
      // under load a collection can leave it for the next: ask again, a while, before measuring
      for (let i = 0; i < 20; i++) {
        await new Promise((resolve) => setTimeout(resolve, 50))
        gc(); gc()
        if (process.memoryUsage().external < size / 8) break
      }
      console.log(JSON.stringify({size, external: process.memoryUsage().external, routes: ctx.snapshot.bird.routes.length}))`
    const {stdout} = await execa('node', ['--expose-gc', '--input-type=module', '-e', script, dir], {cwd: ROOT})
    const {size, external, routes} = JSON.parse(stdout) as {size: number; external: number; routes: number}
    expect(routes).toBeGreaterThan(5000) // the broken prefixes' paths, held with their lines
    expect(size).toBeGreaterThan(20 * 2 ** 20)
    // what is left outside the heap is Node's own (a few MiB), not the texts
    expect(external).toBeLessThan(size / 4)
  })
})
