// JSON on stdout without building one giant string: a full table's report can exceed V8's maximum
// string length, so top-level arrays are written element by element, in chunks, honouring backpressure.
// Elements are compact, one per line: a full table's report stays greppable and cheap to produce.
import type {Writable} from 'node:stream'

const CHUNK = 1 << 20

export async function writeJson(out: Writable, value: Record<string, unknown>): Promise<void> {
  let buffer = ''
  const flush = async (force: boolean) => {
    if (buffer.length < CHUNK && !force) return
    const ok = out.write(buffer)
    buffer = ''
    if (!ok) await new Promise<void>((resolve) => out.once('drain', resolve))
  }
  const keys = Object.keys(value).filter((k) => value[k] !== undefined)
  buffer += '{\n'
  for (const [i, key] of keys.entries()) {
    const v = value[key]
    buffer += `  ${JSON.stringify(key)}: `
    if (Array.isArray(v) && v.length > 0) {
      buffer += '[\n'
      for (const [j, item] of v.entries()) {
        buffer += `    ${JSON.stringify(item)}${j < v.length - 1 ? ',' : ''}\n`
        await flush(false)
      }
      buffer += '  ]'
    } else {
      buffer += JSON.stringify(v)
    }
    buffer += `${i < keys.length - 1 ? ',' : ''}\n`
    await flush(false)
  }
  buffer += '}\n'
  await flush(true)
}
