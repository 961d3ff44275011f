// `overlay-settings.json` -> the --protocol, --table and --tunnel-dev a snapshot was diagnosed with (written by
// `bundle`), so that a replay reads the overlay as the collection did:
// `{"protocol": 158, "table": 1158, "tunnelDev": "tunl0"}`, each optional.
import {ParseError} from '../model/errors.js'
import type {OverlaySettingsRecord} from '../model/types.js'
import {jsonErrorOffset, lineAt} from './ip-common.js'

const EXAMPLE = 'a JSON object such as {"protocol": 158, "table": 1158, "tunnelDev": "tunl0"}'

/** What an overlay table must be (DESIGN §5): outside the tables Felix and the kernel use, and BIRD may learn. */
export const OVERLAY_TABLE_EXPECTED =
  'a table outside 1-255 (Felix may claim 1-250, 253-255 are the kernel\'s), up to 4294967295'

export function isOverlayTable(table: unknown): table is number {
  return Number.isInteger(table) && (table as number) >= 256 && (table as number) <= 0xffffffff
}

/** A Linux interface name: 1-15 characters, no `/`, whitespace or `:`, not `.` or `..`. */
export function isInterfaceName(name: string): boolean {
  return /^[^\s/:]{1,15}$/.test(name) && name !== '.' && name !== '..'
}

export function parseOverlaySettings(text: string, file = 'overlay-settings.json'): OverlaySettingsRecord {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    const at = jsonErrorOffset(text)
    const found = at >= text.length ? 'end of file' : text.slice(at, at + 30).split('\n')[0]
    throw new ParseError(file, lineAt(text, at), `${EXAMPLE} (invalid JSON)`, found)
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ParseError(file, 1, EXAMPLE, JSON.stringify(value))
  }
  const o = value as Record<string, unknown>
  const line = (key: string) => {
    const i = text.indexOf(`"${key}"`)
    return i < 0 ? 1 : lineAt(text, i)
  }
  const out: OverlaySettingsRecord = {}
  if (o.protocol !== undefined) {
    if (!Number.isInteger(o.protocol) || (o.protocol as number) < 1 || (o.protocol as number) > 255) {
      const found = JSON.stringify(o.protocol)
      throw new ParseError(file, line('protocol'), '"protocol" to be a route protocol number 1-255', found)
    }
    out.protocol = o.protocol as number
  }
  if (o.table !== undefined) {
    // a table inside 1-255, which earlier builds' `bundle --table` recorded: kept apart, for the replay to say it is
    // not used (`fix` never wrote there), not refused, so that the bundle still replays
    if (Number.isInteger(o.table) && (o.table as number) >= 1 && (o.table as number) <= 255) {
      out.refusedTable = {table: o.table as number, line: line('table')}
    } else if (isOverlayTable(o.table)) {
      out.table = o.table
    } else {
      // refused as --table is; no build ever replayed such a value (0, negative, not an integer, above 2^32 - 1)
      throw new ParseError(file, line('table'), `"table" to be ${OVERLAY_TABLE_EXPECTED}`, JSON.stringify(o.table))
    }
  }
  if (o.tunnelDev !== undefined) {
    if (typeof o.tunnelDev !== 'string' || !isInterfaceName(o.tunnelDev)) {
      const found = JSON.stringify(o.tunnelDev)
      throw new ParseError(file, line('tunnelDev'), '"tunnelDev" to be an interface name such as "tunl0" ' +
        '(1-15 characters, no \'/\', \':\' or spaces)', found)
    }
    out.tunnelDev = o.tunnelDev
  }
  return out
}

