// ANSI-aware line fitting for the TUI: the list is truncated, never wrapped; long panes are
// hard-wrapped here (not by Ink) so that scrolling counts screen rows exactly.
// Every printable code point counts as one column; tabs expand to the next stop of 8.

// eslint-disable-next-line no-control-regex
const SGR = /\x1b\[[0-9;]*m/y
// eslint-disable-next-line no-control-regex
const ANY_SGR = /\x1b\[[0-9;]*m/g

export function stripAnsi(s: string): string {
  return s.replace(ANY_SGR, '')
}

export function visibleWidth(s: string): number {
  return [...stripAnsi(expandTabs(s))].length
}

export function expandTabs(s: string): string {
  if (!s.includes('\t')) return s
  let out = ''
  let col = 0
  for (const token of tokens(s)) {
    if (token.esc) { out += token.text; continue }
    if (token.text === '\t') {
      const n = 8 - (col % 8)
      out += ' '.repeat(n)
      col += n
    } else {
      out += token.text
      col += 1
    }
  }
  return out
}

interface Token { text: string; esc: boolean }

function* tokens(s: string): Generator<Token> {
  let i = 0
  while (i < s.length) {
    if (s.charCodeAt(i) === 0x1b) {
      SGR.lastIndex = i
      const m = SGR.exec(s)
      if (m) { yield {text: m[0], esc: true}; i += m[0].length; continue }
    }
    const cp = s.codePointAt(i)!
    const ch = String.fromCodePoint(cp)
    yield {text: ch, esc: false}
    i += ch.length
  }
}

/** The SGR codes still in force after `codes`, so a wrapped line can reopen them. */
function stillOpen(open: string[], esc: string): string[] {
  const params = esc.slice(2, -1).split(';').filter((p) => p !== '').map(Number)
  if (params.length === 0 || params.includes(0)) return []
  const closes: Record<number, (p: number) => boolean> = {
    22: (p) => p === 1 || p === 2,
    23: (p) => p === 3,
    24: (p) => p === 4,
    27: (p) => p === 7,
    28: (p) => p === 8,
    29: (p) => p === 9,
    39: (p) => (p >= 30 && p <= 38) || (p >= 90 && p <= 97),
    49: (p) => (p >= 40 && p <= 48) || (p >= 100 && p <= 107),
  }
  const first = params[0]
  if (closes[first]) return open.filter((o) => !closes[first](Number(o.slice(2, -1).split(';')[0])))
  return [...open, esc]
}

const RESET = '\x1b[0m'

/** At most `width` columns; a cut line ends in `…`. */
export function truncate(s: string, width: number): string {
  const line = expandTabs(s)
  if (width <= 0) return ''
  if (visibleWidth(line) <= width) return line
  let out = ''
  let col = 0
  let open: string[] = []
  for (const t of tokens(line)) {
    if (t.esc) { out += t.text; open = stillOpen(open, t.text); continue }
    if (col === width - 1) break
    out += t.text
    col += 1
  }
  return out + '…' + (open.length > 0 ? RESET : '')
}

/**
 * Where a line's continuation rows start: under its text, that is after its indent, or after a
 * leading label that two or more spaces end ("3. ✔ BIRD paths    unicast …", "file.txt:12  text"), or two
 * columns past that label when the gap is wide.
 */
export function hangColumn(plain: string, width: number): number {
  const indent = plain.match(/^ */)![0].length
  const label = /^( *\S.*?)( {2,})(?=\S)/.exec(plain)
  if (!label) return Math.min(Math.floor(width / 2), indent)
  // under the text after the gap; when that is far right, two columns past the label
  const column = [label[0].length, label[1].length + 2].find((n) => n <= width * 0.6)
  return column ?? Math.min(Math.floor(width / 2), indent)
}

/**
 * Wrap to `width` columns at the last space that fits (hard break where there is none), keeping
 * colours across breaks; continuation rows are indented by `hangBy` (default: hangColumn).
 */
export function wrap(s: string, width: number, hangBy?: number): string[] {
  const rows: string[] = []
  for (const raw of s.split('\n')) {
    const line = expandTabs(raw)
    const hang = hangBy ?? hangColumn(stripAnsi(line), width)
    if (width <= hang + 1) { rows.push(truncate(line, width)); continue }
    if (visibleWidth(line) <= width) { rows.push(line); continue }
    interface Item { text: string; esc: boolean; before: string[] }
    let lead = ''
    let leadCols = 0
    let items: Item[] = []
    let open: string[] = []
    const visible = (its: Item[]) => its.filter((x) => !x.esc).length
    const render = (its: Item[], openAfter: string[]) =>
      lead + its.map((x) => x.text).join('') + (openAfter.length > 0 ? RESET : '')
    for (const t of tokens(line)) {
      if (t.esc) {
        items.push({...t, before: open})
        open = stillOpen(open, t.text)
        continue
      }
      if (leadCols + visible(items) >= width) {
        let cut = -1
        for (let k = items.length - 1; k >= 0; k--) if (!items[k].esc && items[k].text === ' ') { cut = k; break }
        const carried = cut >= 0 ? items.slice(cut + 1) : []
        if (t.text !== ' ' && cut >= 0 && visible(items.slice(0, cut)) > 0 && hang + visible(carried) + 1 < width) {
          const openAtCut = items[cut].before
          const kept = items.slice(0, cut)
          while (kept.length > 0 && !kept.at(-1)!.esc && kept.at(-1)!.text === ' ') kept.pop()
          rows.push(render(kept, openAtCut))
          lead = ' '.repeat(hang) + openAtCut.join('')
          items = carried
        } else {
          rows.push(render(items, open))
          lead = ' '.repeat(hang) + open.join('')
          items = []
          leadCols = hang
          if (t.text === ' ') continue // a break eats the space
        }
        leadCols = hang
      }
      items.push({...t, before: open})
    }
    rows.push(render(items, []))
  }
  return rows
}

/** Pad (or cut) to exactly `width` columns. */
export function fit(s: string, width: number): string {
  const t = truncate(s, width)
  return t + ' '.repeat(Math.max(0, width - visibleWidth(t)))
}
