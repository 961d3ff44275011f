// The Node receive floor of a live `check`: a Node process that receives what check reads of a full table and does
// nothing with it. BIRD's `show route all` over its control socket and `ip -j -d route show table all` through a
// pipe (node:child_process, as execa makes it), side by side; the bytes are counted and dropped. Run it as check runs
// (`ip netns exec NS node bench/receive-floor.mjs SOCKET`): its wall is Node's start-up and the reads, the part of
// check no parse can remove. BIRD's reply ends at its final line, `NNNN ` (src/collect/bird-socket.ts's framing: a
// code is followed by `-` on every other line, continuations start with a space), and nothing follows it, so the
// reply is complete when the last line received is a final one: each chunk's last line is looked at, no other.
// Prints one JSON line: {bird, ip} (bytes received), {birdCode} (the reply's final code).
// Usage: node bench/receive-floor.mjs SOCKET
import {spawn} from 'node:child_process'
import net from 'node:net'

const NL = 0x0a
const isDigit = (c) => c >= 0x30 && c <= 0x39

/**
 * Feeds a stream of BIRD reply bytes; calls onFinal(code) when a chunk ends with a final line. Keeps only the first
 * bytes of the line a chunk leaves unfinished.
 */
function finalLineWatcher(onFinal) {
  let head = Buffer.alloc(0) // the first bytes (at most 5) of the line not yet finished
  return (chunk) => {
    const last = chunk.lastIndexOf(NL)
    if (last < 0) {
      if (head.length < 5) head = Buffer.concat([head, chunk.subarray(0, 5 - head.length)])
      return
    }
    if (last === chunk.length - 1) {
      const prev = last > 0 ? chunk.lastIndexOf(NL, last - 1) : -1 // a negative offset counts from the end
      // the last line's first bytes, and its length
      const line = prev >= 0 ? chunk.subarray(prev + 1, last)
        : Buffer.concat([head, chunk.subarray(0, Math.min(last, 5))])
      const n = prev >= 0 ? line.length : head.length + last
      const coded = n >= 4 && [0, 1, 2, 3].every((i) => isDigit(line[i]))
      if (coded && (n === 4 || line[4] === 0x20)) onFinal(Number(line.subarray(0, 4).toString('latin1')))
    }
    head = chunk.subarray(last + 1, last + 6)
  }
}

function bird(path) {
  return new Promise((resolve, reject) => {
    const s = net.createConnection(path)
    let bytes = 0
    let greeted = false
    const watch = finalLineWatcher((code) => {
      if (!greeted) {
        greeted = true // the greeting, `0001 BIRD 2.0.12 ready.`
        s.write('show route all\n')
        return
      }
      s.destroy()
      resolve({bytes, code})
    })
    s.on('data', (chunk) => {
      if (greeted) bytes += chunk.length
      watch(chunk)
    })
    s.on('error', reject)
    s.on('close', () => reject(new Error('BIRD closed the connection before its reply ended')))
  })
}

function ip() {
  return new Promise((resolve, reject) => {
    const p = spawn('ip', ['-j', '-d', 'route', 'show', 'table', 'all'], {stdio: ['ignore', 'pipe', 'inherit']})
    let bytes = 0
    p.stdout.on('data', (chunk) => (bytes += chunk.length))
    p.on('error', reject)
    p.on('close', (code) => (code === 0 ? resolve(bytes) : reject(new Error(`ip exited with ${code}`))))
  })
}

const [b, i] = await Promise.all([bird(process.argv[2]), ip()])
console.log(JSON.stringify({bird: b.bytes, ip: i, birdCode: b.code}))
