// Writing to the kernel asks first on a TTY and refuses without --yes when there is none.
import {createInterface} from 'node:readline/promises'

import {UsageError} from '../model/errors.js'

export async function confirm(question: string, yes: boolean): Promise<boolean> {
  if (yes) return true
  if (!process.stdin.isTTY) throw new UsageError('refusing to change routes without --yes: there is no TTY to ask on')
  const rl = createInterface({input: process.stdin, output: process.stderr})
  try {
    const answer = await rl.question(`${question} [y/N] `)
    return /^y(es)?$/i.test(answer.trim())
  } finally {
    rl.close()
  }
}
