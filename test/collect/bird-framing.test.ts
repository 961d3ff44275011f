// The reply assembler on real raw-socket captures of BIRD 1.6.8, 2.0.12, 3.0.5 and 3.2.3, fed whole,
// split at every offset, byte by byte and in random chunk sizes.

import { constants } from 'node:buffer'
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BirdReplyAssembler, birdcText, type BirdReply } from '../../src/collect/bird-socket.js'
import { isErrorCode } from '../../src/parse/bird-framing.js'

const CAPTURES = path.resolve(import.meta.dirname, '../fixtures/bird-captures')
const captureFiles = readdirSync(CAPTURES).filter((f) => f.endsWith('-rawsocket.txt')).sort()

interface Block {
  command: string // '' for the greeting
  raw: string // the framed reply, newline-terminated lines
}

// The captures interleave `>>> CMD` markers (written by the capturing client, not by BIRD) with replies.
function blocks(file: string): Block[] {
  const lines = readFileSync(path.join(CAPTURES, file), 'utf8').split('\n')
  if (lines.at(-1) === '') lines.pop()
  const out: Block[] = [{ command: '', raw: '' }]
  for (const l of lines) {
    if (l.startsWith('>>> ')) out.push({ command: l.slice(4), raw: '' })
    else out.at(-1)!.raw += l + '\n'
  }
  return out
}

function feed(chunks: (Buffer | string)[]): BirdReply[] {
  const a = new BirdReplyAssembler()
  const out: BirdReply[] = []
  for (const c of chunks) out.push(...a.push(c))
  expect(a.inReply).toBe(false)
  return out
}

const summary = (rs: BirdReply[]) => rs.map((r) => ({ code: r.code, raw: r.raw, text: birdcText(r) }))

describe.each(captureFiles)('%s', (file) => {
  const bs = blocks(file)
  const stream = Buffer.from(bs.map((b) => b.raw).join(''), 'utf8')
  const whole = feed([stream])

  it('assembles one reply per command, greeting first', () => {
    expect(bs.length).toBeGreaterThan(2)
    expect(whole).toHaveLength(bs.length)
    whole.forEach((r, i) => expect(r.raw).toBe(bs[i]!.raw))
    expect(whole[0]!.code).toBe(1)
    expect(birdcText(whole[0]!)).toMatch(/^BIRD \S+ ready\.\n$/)
  })

  it('ends each reply on its only `NNNN ` line, with that code', () => {
    for (const [i, r] of whole.entries()) {
      const rawLines = bs[i]!.raw.split('\n').slice(0, -1)
      const finals = rawLines.filter((l) => /^\d{4} /.test(l))
      expect(finals).toEqual([rawLines.at(-1)])
      expect(r.code).toBe(Number(rawLines.at(-1)!.slice(0, 4)))
    }
  })

  it('prints like birdc: codes and the continuation marker stripped, code-0 lines dropped, tabs kept', () => {
    for (const [i, r] of whole.entries()) {
      const rawLines = bs[i]!.raw.split('\n').slice(0, -1)
      const printed = birdcText(r).split('\n').slice(0, -1)
      const kept = rawLines.filter((l) => !/^0000[ -]/.test(l))
      expect(printed).toHaveLength(kept.length)
      kept.forEach((l, j) => expect(printed[j]).toBe(l.startsWith(' ') ? l.slice(1) : l.slice(5)))
      // No printed line still carries its frame.
      for (const p of printed) expect(p).not.toMatch(/^\d{4}[ -]/)
    }
    const status = whole.find((_, i) => bs[i]!.command === 'show status')!
    const version = /^BIRD (\S+) ready\./.exec(birdcText(whole[0]!))![1]
    expect(birdcText(status).split('\n')[0]).toBe(`BIRD ${version}`)
    expect(birdcText(status)).toMatch(/\nDaemon is up and running\n$/)
  })

  it('keeps continuation lines under the previous code', () => {
    for (const r of whole) {
      let prev = -1
      for (const l of r.lines) {
        if (l.kind === 'continuation') expect(l.code).toBe(prev)
        prev = l.code
      }
    }
  })

  it('classifies error replies (8xxx/9xxx) only for the commands that failed', () => {
    for (const [i, r] of whole.entries()) {
      const failed = isErrorCode(r.code)
      expect(failed).toBe(/^[89]\d{3} /.test(bs[i]!.raw))
      if (failed) expect(r.lines).toHaveLength(1)
    }
  })

  it('gives the same replies when split at any single offset', () => {
    const expected = summary(whole)
    // Every offset for the small captures; a stride for the big one keeps the run short.
    const step = stream.length > 12_000 ? 7 : 1
    for (let at = 0; at <= stream.length; at += step) {
      const got = feed([stream.subarray(0, at), stream.subarray(at)])
      if (got.length !== expected.length || got.some((r, k) => r.raw !== expected[k]!.raw)) {
        expect.fail(`split at byte ${at} changed the replies`)
      }
    }
  })

  it('gives the same replies fed byte by byte', () => {
    const chunks = Array.from({ length: stream.length }, (_, k) => stream.subarray(k, k + 1))
    expect(summary(feed(chunks))).toEqual(summary(whole))
  })

  it('gives the same replies for random chunkings', () => {
    const expected = summary(whole)
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 200 }), (sizes) => {
        const chunks: Buffer[] = []
        let at = 0
        for (let k = 0; at < stream.length; k++) {
          const n = sizes[k % sizes.length]!
          chunks.push(stream.subarray(at, at + n))
          at += n
        }
        expect(summary(feed(chunks))).toEqual(expected)
      }),
      { numRuns: 60 },
    )
  })
})

describe('the printed form cut from the bytes', () => {
  // birdc's rules, line by line on the raw text (as birdcText once walked it): `+` async, ` ` continuation,
  // NNNN- or NNNN or NNNN<space> framed (code 0 prints nothing), anything else `??? <line>`
  const fromRaw = (r: BirdReply) => r.raw.split('\n').slice(0, -1).map((raw) => {
    if (raw.startsWith('+')) return ''
    if (raw.startsWith(' ')) return `${raw.slice(1)}\n`
    const m = /^(\d{4})([ -])(.*)$/s.exec(raw) ?? (/^\d{4}$/.test(raw) ? [raw, raw, ' ', ''] : null)
    if (!m) return `??? <${raw}>\n`
    return Number(m[1]) !== 0 ? `${m[3]}\n` : ''
  }).join('')
  // the structured view, made on demand, says the same
  const fromLines = (r: BirdReply) => r.lines.map((l) => (l.kind === 'continuation' ? `${l.text}\n` : l.kind === 'unframed' ? `??? <${l.raw}>\n` : l.code !== 0 ? `${l.text}\n` : '')).join('')
  const line = fc.oneof(
    fc.tuple(fc.integer({min: 0, max: 9999}), fc.constantFrom('-', ' '), fc.string({unit: fc.constantFrom('a', ' ', '\t', 'é', '€', '\r', '0', '-')})).map(([c, sep, t]) => `${String(c).padStart(4, '0')}${sep}${t}`),
    fc.string({unit: fc.constantFrom('a', '\t', 'ü', ' ')}).map((t) => ` ${t}`),
    fc.string().map((t) => `+${t.replace(/\n/g, '')}`),
    fc.string({unit: fc.constantFrom('x', '1', '2', ' ', '\r', '+')}).filter((t) => !/^\d{4}( |$)/.test(t) && !t.startsWith(' ') && !t.startsWith('+')),
    fc.constantFrom('0000', '1234', '', '12', '0001 ', '9001 syntax error'),
  )
  // the lines, then a final line with code `end`
  const replyBytes = (lines: string[], end: number) =>
    Buffer.from([...lines, `${String(end).padStart(4, '0')} done`].map((l) => `${l}\n`).join(''), 'utf8')
  // `bytes` pushed in chunks cut at `cuts` (modulo its length); the replies completed
  const pushCut = (a: BirdReplyAssembler, bytes: Buffer, cuts: number[]): BirdReply[] => {
    const at = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((x, y) => x - y)
    const replies: BirdReply[] = []
    let from = 0
    for (const c of [...at, bytes.length]) {
      replies.push(...a.push(bytes.subarray(from, c)))
      from = c
    }
    return replies
  }
  it('is what the structured lines print, for any lines in any chunks', () => {
    fc.assert(
      fc.property(
        fc.array(line, {maxLength: 30}),
        fc.integer({min: 0, max: 9999}),
        fc.array(fc.nat(), {maxLength: 6}),
        (lines, end, cuts) => {
          const bytes = replyBytes(lines, end)
          const replies = pushCut(new BirdReplyAssembler(), bytes, cuts)
          expect(replies.length).toBeGreaterThan(0)
          for (const r of replies) {
            expect(birdcText(r)).toBe(fromRaw(r))
            expect(fromLines(r)).toBe(fromRaw(r))
          }
          expect(replies.map((r) => r.raw).join('')).toBe(bytes.toString('utf8'))
        },
      ),
      {numRuns: 400},
    )
  })

  it('is the same printed as the reply arrives (printNext), whatever buffer it starts in', () => {
    fc.assert(
      fc.property(
        fc.array(line, {maxLength: 30}),
        fc.integer({min: 0, max: 9999}),
        fc.array(fc.nat(), {maxLength: 6}),
        fc.string(),
        fc.integer({min: 1, max: 64}),
        (lines, end, cuts, prefix, first) => {
          const bytes = replyBytes(lines, end)
          const whole = new BirdReplyAssembler().push(bytes)
          const a = new BirdReplyAssembler()
          a.printNext(prefix, first)
          const replies = pushCut(a, bytes, cuts)
          expect(replies.map((r) => r.code)).toEqual(whole.map((r) => r.code))
          // the first reply printed as it came; the ones after it as before
          expect(replies[0]!.printed(prefix)).toBe(whole[0]!.printed(prefix))
          expect(replies[0]!.async).toEqual(whole[0]!.async)
          expect(() => replies[0]!.raw).toThrow(/printed as it arrived/)
          for (const [i, r] of replies.entries()) if (i > 0) expect(r.raw).toBe(whole[i]!.raw)
          expect(a.inReply).toBe(false)
        },
      ),
      {numRuns: 400},
    )
  })
})

describe('BirdReplyAssembler edge cases', () => {
  it('refuses a reply longer than one text by its size, in plain words, before copying it together', () => {
    // 1 MiB lines, all one buffer: the reply's pieces are views of it, so ~540 MB are never in memory
    const line = Buffer.alloc(2 ** 20, 'x')
    line.write('1007-', 0)
    line[line.length - 1] = 0x0a
    const a = new BirdReplyAssembler()
    const lines = Math.ceil(constants.MAX_STRING_LENGTH / (line.length - 5)) + 1
    for (let i = 0; i < lines; i++) expect(a.push(line)).toEqual([])
    const [r] = a.push('0000 \n')
    const size = lines * (line.length - 5)
    expect(() => birdcText(r!)).toThrow(`BIRD's reply is ${size} bytes, more than one text can hold here (${constants.MAX_STRING_LENGTH} bytes: V8's longest string)`)
    expect(() => r!.raw).toThrow(/more than one text can hold here/)
    // a reply under the limit is one text as before
    const b = new BirdReplyAssembler()
    for (let i = 0; i < 3; i++) b.push(line)
    const [small] = b.push('0000 \n')
    expect(birdcText(small!).length).toBe(3 * (line.length - 5))
  })

  it('prints a reply larger than its first buffer as it arrives, as it prints whole', () => {
    const bytes = Buffer.from(`${'1007-10.0.0.0/24 blackhole\n \tType: BGP univ\n'.repeat(20000)}0000 \n`)
    const [whole] = new BirdReplyAssembler().push(bytes)
    const a = new BirdReplyAssembler()
    a.printNext('BIRD 2.0.12 ready.\n')
    const replies: BirdReply[] = []
    for (let at = 0; at < bytes.length; at += 65536) replies.push(...a.push(bytes.subarray(at, at + 65536)))
    expect(replies).toHaveLength(1)
    expect(replies[0]!.printed('BIRD 2.0.12 ready.\n')).toBe(whole!.printed('BIRD 2.0.12 ready.\n'))
  })

  it('waits for the newline of a final line split after `0000`', () => {
    const a = new BirdReplyAssembler()
    expect(a.push('1007-10.0.0.0/24 blackhole\n0000')).toEqual([])
    expect(a.inReply).toBe(true)
    expect(a.push(' ')).toEqual([])
    const [r] = a.push('\n')
    expect(r!.code).toBe(0)
    expect(birdcText(r!)).toBe('10.0.0.0/24 blackhole\n')
  })

  it('does not take `0000-` or a 4-digit payload for the end', () => {
    const a = new BirdReplyAssembler()
    expect(a.push('0000-x\n 0000 not final either\n')).toEqual([])
    const [r] = a.push('0000 \n')
    expect(birdcText(r!)).toBe('0000 not final either\n')
  })

  it('keeps a multi-byte character split across chunks', () => {
    const bytes = Buffer.from('1002-prot\u00fc\u20ac  up\n0000 \n', 'utf8')
    for (let at = 0; at <= bytes.length; at++) {
      const a = new BirdReplyAssembler()
      const rs = [...a.push(bytes.subarray(0, at)), ...a.push(bytes.subarray(at))]
      expect(rs.map(birdcText)).toEqual(['prot\u00fc\u20ac  up\n'])
    }
  })

  it('leaves asynchronous `+` lines out of the printed reply', () => {
    const [r] = new BirdReplyAssembler().push('1000-BIRD 2.0.12\n+log line\n 1011 cont\n0013 up\n')
    expect(r!.async).toEqual(['log line'])
    expect(birdcText(r!)).toBe('BIRD 2.0.12\n1011 cont\nup\n')
  })

  it('prints an unframed line as birdc does', () => {
    const [r] = new BirdReplyAssembler().push('garbage\n0000 \n')
    expect(birdcText(r!)).toBe('??? <garbage>\n')
  })

  it('prints a reply of short unframed lines, which prints longer than it came', () => {
    // each 2-byte line prints as 8 bytes: more than the reply's own bytes hold
    const [r] = new BirdReplyAssembler().push(`${'x\n'.repeat(1000)}0000 \n`)
    expect(r!.printed('> ')).toBe(`> ${'??? <x>\n'.repeat(1000)}`)
  })

  it('prints continuation and coded lines the same once unframed lines have filled the bytes printed so far', () => {
    // the unframed lines print longer than they came, so what follows no longer fits as it is looked through
    const [r] = new BirdReplyAssembler().push(`${'x\n'.repeat(3000)}${' c\n1007-d\n0000-z\n'.repeat(500)}0000 \n`)
    expect(r!.printed()).toBe(`${'??? <x>\n'.repeat(3000)}${'c\nd\n'.repeat(500)}`)
  })

  it('completes two replies that arrive in one chunk', () => {
    const rs = new BirdReplyAssembler().push('0001 BIRD 1.6.8 ready.\n9001 IP address expected\n')
    expect(rs.map((r) => r.code)).toEqual([1, 9001])
  })
})
