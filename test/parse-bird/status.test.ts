// parseBirdStatus on real `show status` output (test/fixtures/bird-captures and the scenarios).
import {describe, expect, it} from 'vitest'

import {ParseError} from '../../src/model/errors.js'
import {birdVersionInfo, parseBirdStatus} from '../../src/parse/bird-status.js'
import {capture, fixture, rawCapture} from './captures.js'

describe('parseBirdStatus', () => {
  it('every captured version', () => {
    const cases: [string, string, number, string][] = [
      ['bird1.6.8-B16-established.txt', '1.6.8', 1, '10.0.0.2'],
      ['bird1.6.8-B16v6-established.txt', '1.6.8', 1, '10.0.0.2'],
      ['bird2.0.12-A2-established.txt', '2.0.12', 2, '10.0.0.1'],
      ['bird2.0.12-B2-established.txt', '2.0.12', 2, '10.0.2.2'],
      ['bird3.0.5-B30-established.txt', '3.0.5', 3, '10.0.5.1'],
      ['bird3.2.3-B3-established.txt', '3.2.3', 3, '10.0.4.2'],
    ]
    for (const [file, version, major, routerId] of cases) {
      expect(parseBirdStatus(capture(file, 'show status')), file).toMatchObject({version, major, routerId, calicoFork: false})
    }
  })

  it('raw socket replies (1000/1011 codes, continuations, 0013 end)', () => {
    for (const [file, version] of [['bird1.6.8-B16-rawsocket.txt', '1.6.8'], ['bird2.0.12-A2-rawsocket.txt', '2.0.12'], ['bird3.0.5-B30-rawsocket.txt', '3.0.5'], ['bird3.2.3-B3-rawsocket.txt', '3.2.3']]) {
      const s = parseBirdStatus(`0001 BIRD ${version} ready.\n${rawCapture(file!, 'show status')}`)
      expect(s.version).toBe(version)
      expect(s.pos).toMatchObject({line: 1, endLine: version === '1.6.8' ? 7 : 8})
    }
  })

  it('scenario snapshots', () => {
    expect(parseBirdStatus(fixture('bird16-ecmp-not-tunneled/birdc-show-status.txt'))).toEqual({
      version: '1.6.8', major: 1, calicoFork: false, routerId: '172.31.10.4', pos: {file: 'birdc-show-status.txt', line: 1, endLine: 7},
    })
    expect(parseBirdStatus(fixture('bird2-peer-down/birdc-show-status.txt'), 'snap/birdc-show-status.txt')).toMatchObject({
      version: '2.0.12', major: 2, routerId: '172.31.10.4', pos: {file: 'snap/birdc-show-status.txt', endLine: 8},
    })
  })

  it("Calico's fork: v0.3.3+birdv1.6.8 is BIRD 1", () => {
    const text = 'BIRD v0.3.3+birdv1.6.8 ready.\nBIRD v0.3.3+birdv1.6.8\nRouter ID is 172.31.10.4\nCurrent server time is 2026-11-29 16:50:36\nLast reboot on 2026-11-29 16:50:22\nLast reconfiguration on 2026-11-29 16:50:22\nDaemon is up and running\n'
    expect(parseBirdStatus(text)).toMatchObject({version: 'v0.3.3+birdv1.6.8', major: 1, calicoFork: true})
    expect(birdVersionInfo('2.0.12')).toEqual({major: 2, calicoFork: false})
    expect(birdVersionInfo('v0.3.3+birdv1.6.8')).toEqual({major: 1, calicoFork: true})
    expect(birdVersionInfo('3.2.3')).toEqual({major: 3, calicoFork: false})
  })

  it('falls back to the greeting when the version line is missing', () => {
    expect(parseBirdStatus('BIRD 2.0.8 ready.\nRouter ID is 10.0.0.1\nDaemon is up and running').version).toBe('2.0.8')
    expect(parseBirdStatus('BIRD 2.0.8 ready.\r\nBIRD 2.0.8\r\nReconfiguration in progress\r\n').major).toBe(2)
  })

  it('input that is no status report', () => {
    const err = (t: string): ParseError => {
      try {
        parseBirdStatus(t)
      } catch (error) {
        expect(error).toBeInstanceOf(ParseError)
        return error as ParseError
      }
      throw new Error('no error')
    }
    expect(err('Router ID is 10.0.0.1\n').expected).toMatch(/version/)
    expect(err('BIRD 2.0.12 ready.\nBIRD 2.0.12\n10.0.0.0/8 unicast [x 1] (1)\n').line).toBe(3)
    expect(err('').line).toBe(1)
  })
})
