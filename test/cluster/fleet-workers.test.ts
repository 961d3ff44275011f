// fleet --jobs: a worker thread that dies fails the source it was on, naming it, and never an earlier source's
// answer: the first error in the sources' order is still the one thrown (services/fleet.ts foldInWorkers, driven by a
// stand-in worker that speaks the real one's protocol).
import {describe, expect, it} from 'vitest'

import {RouteDoctorError} from '../../src/model/errors.js'
import {foldInWorkers} from '../../src/services/fleet.js'

const FAKE = new URL('./fake-fleet-worker.mjs', import.meta.url)

async function fold(sources: string[], jobs: number): Promise<{folded: string[]; error?: unknown}> {
  const folded: string[] = []
  try {
    await foldInWorkers(FAKE, sources, jobs, {opts: {}, truth: undefined}, (source) => folded.push(source))
    return {folded}
  } catch (error) {
    return {folded, error}
  }
}

describe('fleet workers: a thread that dies', () => {
  it('does not mask an earlier source\'s bad input: that error is thrown, exit 2', async () => {
    const {folded, error} = await fold(['bad', 'crash', 'fine'], 2)
    expect(folded).toEqual([])
    expect(error).toBeInstanceOf(RouteDoctorError)
    expect(error).toMatchObject({message: 'bad/sysctl.txt:2: expected a "name = value" line', exit: 2, code: 'E_PARSE'})
  })

  it('fails the source it was on, naming it; the sources before it are folded', async () => {
    const {folded, error} = await fold(['one', 'two', 'crash', 'four'], 2)
    expect(folded).toEqual(['one', 'two'])
    expect((error as Error).message).toBe('crash: a worker thread stopped (the thread fell over) while diagnosing it')
  })

  it('the other workers go on with the sources after it', async () => {
    const {folded, error} = await fold(['one', 'fine', 'two', 'three', 'crash'], 2)
    expect(folded).toEqual(['one', 'fine', 'two', 'three'])
    expect((error as Error).message).toMatch(/^crash: a worker thread stopped/)
  })
})
