// `fix`'s sequence (services/fix.ts fixCommand): what is shown, and when the user is asked, before anything is written.
// The confirmed apply and revert on a live kernel are test/integration/fix-apply.test.ts's.
import path from 'node:path'

import {describe, expect, it} from 'vitest'

import {fixCommand, type FixShown} from '../../src/services/fix.js'
import {ROOT} from '../helpers.js'

const EXAMPLE = path.join(ROOT, 'examples/bird2-ecmp-not-tunneled')

function dialog(answer: boolean) {
  const asked: string[] = []
  const shown: FixShown[] = []
  return {
    asked,
    shown,
    confirm: async (question: string) => {
      asked.push(question)
      return answer
    },
    show: async (s: FixShown) => {
      shown.push(s)
    },
  }
}

describe('fixCommand', () => {
  it('a dry run shows the plan once and asks nothing', async () => {
    const d = dialog(true)
    await fixCommand({source: {from: EXAMPLE}}, d)
    expect(d.asked).toEqual([])
    expect(d.shown).toHaveLength(1)
    expect(d.shown[0].text).toContain('ip route replace 192.168.110.128/26 table 1158')
    expect(d.shown[0].exitCode).toBe(0)
  })

  it('with --json the plan is shown as JSON, not text', async () => {
    const d = dialog(true)
    await fixCommand({source: {from: EXAMPLE}, json: true}, d)
    expect(d.shown).toHaveLength(1)
    expect(d.shown[0].text).toBeUndefined()
    expect(d.shown[0].json).toMatchObject({schema: 1, table: 1158})
  })

  it('--apply on a snapshot is refused before anything is shown or asked', async () => {
    const d = dialog(true)
    await expect(fixCommand({source: {from: EXAMPLE}, apply: true}, d)).rejects.toThrow(/--apply .* cannot be used with --from/)
    expect(d.asked).toEqual([])
    expect(d.shown).toEqual([])
  })

  it('--revert asks first; declined, nothing is read or shown', async () => {
    const d = dialog(false)
    await fixCommand({source: {}, revert: '/nonexistent/journal.json'}, d)
    expect(d.asked).toEqual(['Revert the routes journaled in /nonexistent/journal.json?'])
    expect(d.shown).toEqual([])
  })

  it('--revert confirmed reads the journal, naming it when it cannot', async () => {
    const d = dialog(true)
    await expect(fixCommand({source: {}, revert: '/nonexistent/journal.json'}, d)).rejects.toThrow(
      'cannot read journal /nonexistent/journal.json: no such file (fix --apply prints the path of the journal it writes, under --journal-dir)',
    )
    await expect(fixCommand({source: {}, revert: '/tmp'}, dialog(true))).rejects.toThrow('cannot read journal /tmp: a directory, not a journal')
    expect(d.asked).toHaveLength(1)
  })
})
