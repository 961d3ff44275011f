// One input chunk → the keys in it. Ink hands over everything that arrived in one read as one
// string ("/local\r", "jj\r"): fast typing over SSH and pastes do that. Ink already cuts escape
// sequences (arrows, Esc) into chunks of their own; what is left here is text and control bytes.
import type {KeyInfo} from './state.js'

export interface Key {
  input: string // printable text: a run of it stays one Key (a filter takes it whole)
  key: KeyInfo
}

const CONTROL: Record<string, KeyInfo> = {
  '\r': {return: true}, '\n': {return: true}, '\t': {tab: true},
  '\x7f': {backspace: true}, '\b': {backspace: true}, '\x1b': {escape: true},
}

/** The keys of one chunk, in order; a chunk that is a single key (or has a modifier) is returned as it is. */
export function splitKeys(input: string, key: KeyInfo): Key[] {
  if (key.ctrl || key.meta || [...input].length <= 1) return [{input, key}]
  const keys: Key[] = []
  let text = ''
  const flush = () => {
    if (text !== '') keys.push({input: text, key: {}})
    text = ''
  }
  for (let i = 0; i < input.length; i++) {
    const ch = input[i]
    const code = ch.charCodeAt(0)
    if (code >= 0x20 && code !== 0x7f) {
      text += ch
      continue
    }
    flush()
    if (ch === '\r' && input[i + 1] === '\n') i++ // a pasted CRLF is one Enter
    if (CONTROL[ch]) keys.push({input: '', key: CONTROL[ch]})
    else keys.push({input: String.fromCharCode(code + 0x60), key: {ctrl: true}}) // Ctrl+letter
  }
  flush()
  return keys
}
