// The framing pre-pass: birdc text and raw control-socket replies give the same payload lines,
// with the original line numbers.
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import {BirdFramer, bannerVersion, frameBirdText} from '../../src/parse/bird-framing.js'
import {rawCapture} from './captures.js'

function collect(text: string): [string, number, number | undefined][] {
  const out: [string, number, number | undefined][] = []
  frameBirdText(text, 'f.txt', (t, l, c) => out.push([t, l, c]))
  return out
}

describe('frameBirdText', () => {
  it('raw socket: codes stripped, one marker space dropped from continuations, 0000 silent', () => {
    const raw = '0001 BIRD 2.0.12 ready.\n1007-Table master4:\n 10.20.0.0/24         unicast [static4 15:45:53.095] * (200)\n \tvia 10.1.0.9 on dA\n1008-\tType: static univ\n1007-                     unicast [b16_v4 15:45:57.740] (100) [AS65002i]\n0000 \n'
    expect(collect(raw)).toEqual([
      ['Table master4:', 2, 1007],
      ['10.20.0.0/24         unicast [static4 15:45:53.095] * (200)', 3, 1007],
      ['\tvia 10.1.0.9 on dA', 4, 1007],
      ['\tType: static univ', 5, 1008],
      ['                     unicast [b16_v4 15:45:57.740] (100) [AS65002i]', 6, 1007],
    ])
  })

  it('birdc: banner dropped, leading spaces and TABs kept, blank lines skipped, CRLF', () => {
    const framer = frameBirdText('BIRD 1.6.8 ready.\r\n10.0.0.0/8 dev x [d 1] * (1)\r\n\r\n                   via 1.2.3.4 on y [b 1] (1)\r\n\tType: x', 'f.txt', () => {})
    expect(framer.mode).toBe('birdc')
    expect(framer.banner).toEqual({version: '1.6.8', line: 1})
    expect(collect('BIRD 1.6.8 ready.\r\n10.0.0.0/8 dev x [d 1] * (1)\r\n\r\n                   via 1.2.3.4 on y [b 1] (1)\r\n\tType: x')).toEqual([
      ['10.0.0.0/8 dev x [d 1] * (1)', 2, undefined],
      ['                   via 1.2.3.4 on y [b 1] (1)', 4, undefined],
      ['\tType: x', 5, undefined],
    ])
  })

  it('async messages and transcript echoes are not payload', () => {
    expect(collect('0001 BIRD 3.2.3 ready.\n+Reconfigured\n1000-BIRD 3.2.3\n>>> show status\n0013 Daemon is up and running\n')).toEqual([
      ['BIRD 3.2.3', 3, 1000],
      ['Daemon is up and running', 5, 13],
    ])
  })

  it('a real raw reply: show status of 3.2.3', () => {
    const lines = collect(rawCapture('bird3.2.3-B3-rawsocket.txt', 'show status')).map((x) => x[0])
    expect(lines).toEqual([
      'BIRD 3.2.3', 'Router ID is 10.0.4.2', 'Hostname is vm', 'Current server time is 2026-11-29 15:50:40.663',
      'Last reboot on 2026-11-29 15:49:53.197', 'Last reconfiguration on 2026-11-29 15:50:31.564', 'Daemon is up and running',
    ])
  })

  it('a raw reply with a line of no reply shape is a ParseError', () => {
    expect(() => collect('1000-BIRD 2.0.12\nhello\n')).toThrow(ParseError)
    try {
      collect('1000-BIRD 2.0.12\nhello\n')
    } catch (error) {
      expect((error as ParseError).line).toBe(2)
    }
  })

  it('a raw reply cut short (no final line) is a ParseError at its last line: what is missing would read as absent', () => {
    const whole = '0001 BIRD 2.0.12 ready.\n1007-Table master4:\n 10.20.0.0/24         unicast [static4 15:45:53.095] * (200)\n' +
      ' \tvia 10.1.0.9 on dA\n1008-\tType: static univ\n0000 \n'
    expect(collect(whole)).toHaveLength(4)
    for (const [cut, line, text] of [[4, 4, ' \tvia 10.1.0.9 on dA'], [5, 5, '1008-\tType: static univ']] as const) {
      const text_ = whole.split('\n').slice(0, cut).join('\n') // no trailing newline either
      const error = (() => {
        try {
          collect(text_)
        } catch (e) {
          return e
        }
      })()
      expect(error).toBeInstanceOf(ParseError)
      expect((error as ParseError).line).toBe(line)
      expect((error as Error).message).toBe(
        `f.txt:${line}: expected the reply to go on to its final line ("0000", or "NNNN text" without a dash): the ` +
          `capture is cut short here, found ${JSON.stringify(text)}`,
      )
    }
    // birdc text has no final line to miss; a raw status reply ends with its `0013 ` line
    expect(() => collect('BIRD 2.0.12 ready.\nBIRD 2.0.12\nRouter ID is 1.2.3.4')).not.toThrow()
    expect(() => collect('1000-BIRD 2.0.12\n1011-Router ID is 1.2.3.4\n0013 Daemon is up and running')).not.toThrow()
  })

  it('BirdFramer can be fed line by line', () => {
    const got: string[] = []
    const f = new BirdFramer('f.txt', (t) => got.push(t))
    f.push('1002-a BGP --- up 1 Established', 1)
    f.push(' b BGP --- up 1 Established\r', 2)
    f.push('0000 ', 3)
    expect(got).toEqual(['a BGP --- up 1 Established', 'b BGP --- up 1 Established'])
    expect(f.mode).toBe('raw')
  })

  it('bannerVersion', () => {
    expect(bannerVersion('BIRD v0.3.3+birdv1.6.8 ready.')).toBe('v0.3.3+birdv1.6.8')
    expect(bannerVersion('BIRD 2.0.12')).toBeUndefined()
  })
})
