// The agent's work in a worker thread, through the built module (a worker runs only from a .js file): reconcile's
// plan is the fix service's plan of the same node, and /report's chunks are `check --json`'s output, to the byte.
import {cpSync, existsSync, rmSync} from 'node:fs'
import path from 'node:path'
import {Writable} from 'node:stream'

import {execa} from 'execa'
import {describe, expect, it} from 'vitest'

import {planOverlay} from '../../src/agent/node-worker.js'
import {plannedOverlay} from '../../src/agent/planned.js'
import {BIN, FIXTURES, ROOT, tempDir} from '../helpers.js'

const BUILT = path.join(ROOT, 'dist/agent/node-worker.js')
const DIR = path.join(FIXTURES, 'bird2-ecmp-not-tunneled')
const source = {from: DIR, ippools: path.join(DIR, 'ippools.yaml')}

describe.skipIf(!existsSync(BUILT))('the agent\'s worker jobs (dist/, npm run build)', () => {
  it('reconcile\'s plan, made in a worker thread, is the fix service\'s plan of the node', async () => {
    const built = (await import(BUILT)) as typeof import('../../src/agent/node-worker.js')
    const apart = await built.planOverlayApart(source, {fixProtocol: '158'}, [])
    const here = await planOverlay(source, {fixProtocol: '158'})
    expect(here.items.length).toBeGreaterThan(0) // three blocks not tunneled
    expect(JSON.parse(apart.json)).toEqual(here)
    expect(apart).toEqual(plannedOverlay(here, []))
    // a prefix in a route war's back-off left out
    const skipped = await built.planOverlayApart(source, {fixProtocol: '158'}, [here.items[0].planned.dst])
    expect(skipped.routes).toBe(here.items.length - 1)
    expect(skipped.signature).not.toBe(apart.signature)
    // of the prefixes asked about (back-offs over), those the plan writes
    const asked = await built.planOverlayApart(source, {fixProtocol: '158'}, [], [here.items[1].planned.dst, '10.9.9.0/26'])
    expect(asked.asked).toEqual([here.items[1].planned.dst])
  })

  it('reconcile\'s plan puts the pools\' rules at watch\'s --rule-priority, as fix\'s does', async () => {
    const built = (await import(BUILT)) as typeof import('../../src/agent/node-worker.js')
    const apart = await built.planOverlayApart(source, {fixProtocol: '158', rulePriority: 1000}, [])
    const rules = (JSON.parse(apart.json) as {rules: Array<{action: string; priority: number}>}).rules
    expect(rules.map((r) => [r.action, r.priority])).toEqual([['add', 1000]])
  })

  it('/report, written from a worker thread a chunk at a time, is check --json', async () => {
    const built = (await import(BUILT)) as typeof import('../../src/agent/node-worker.js')
    const chunks: Buffer[] = []
    const out = new Writable({
      highWaterMark: 1, // every write asks to wait for a drain: the worker waits for it
      write(chunk: Buffer, _encoding, done) {
        chunks.push(chunk)
        setImmediate(done)
      },
    })
    await built.writeReportApart(source, out)
    const check = await execa('node', [BIN, 'check', '--from', DIR, '--ippools', source.ippools, '--json'],
      {reject: false, env: {NO_COLOR: '1'}})
    expect(check.exitCode).toBe(1) // findings of severity error
    expect(Buffer.concat(chunks).toString()).toBe(`${check.stdout}\n`)
  })

  it('a report that cannot be made (no kernel routes) is refused before any chunk, with its error\'s code', async () => {
    const built = (await import(BUILT)) as typeof import('../../src/agent/node-worker.js')
    const dir = tempDir('rd-worker-')
    cpSync(DIR, dir, {recursive: true})
    for (const f of ['ip-j-d-route.json', 'ip-d-route.txt']) rmSync(path.join(dir, f))
    const chunks: Buffer[] = []
    const out = new Writable({write: (chunk: Buffer, _e, done) => (chunks.push(chunk), done())})
    const error = await built.writeReportApart({...source, from: dir}, out).catch((e: unknown) => e)
    // dist's RouteDoctorError, which the server answers 503 as it answers the same error made on its own thread
    expect(error).toMatchObject({name: 'RouteDoctorError', code: 'E_NO_KERNEL_ROUTES', exit: 2})
    expect(chunks).toEqual([])
  })
})
