// A real headless Chromium (Debian's `chromium`) rendering a local page: its DOM after load, as text.
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {execa} from 'execa'

export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium'

/**
 * Why the Chromium tests skip: only where the binary is absent and CI is not set. In CI (`CI` set) they always run,
 * so a missing browser fails them instead of hiding them.
 */
export function chromiumSkipReason(): string | null {
  if (existsSync(CHROMIUM) || process.env.CI) return null
  return `no ${CHROMIUM} (Debian's chromium, installed by .ci/run; CHROMIUM_BIN names another): the HTML page is not rendered`
}

const FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run', '--disable-component-update', '--disable-sync']

async function chromium(args: string[]): Promise<string> {
  const profile = mkdtempSync(path.join(os.tmpdir(), 'rd-chromium-'))
  try {
    if (!existsSync(CHROMIUM)) throw new Error(`no ${CHROMIUM}: install Debian's chromium (.ci/run does) or set CHROMIUM_BIN`)
    const r = await execa(CHROMIUM, [...FLAGS, `--user-data-dir=${profile}`, ...args], {timeout: 60_000, reject: false, stdin: 'ignore'})
    if (r.exitCode !== 0) throw new Error(`chromium exited ${r.exitCode}: ${String(r.stderr).slice(-2000)}`)
    return String(r.stdout)
  } finally {
    rmSync(profile, {recursive: true, force: true})
  }
}

/** The page's DOM after load (`--dump-dom`), in a fresh profile, with no network. */
export async function dumpDom(file: string): Promise<string> {
  const dom = await chromium(['--dump-dom', `file://${path.resolve(file)}`])
  if (!dom.includes('</html>')) throw new Error(`chromium dumped no document for ${file}`)
  return dom
}

/** A screenshot of the page (PNG bytes). */
export async function screenshot(file: string): Promise<Buffer> {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'rd-shot-')), 'page.png')
  await chromium(['--window-size=1000,800', `--screenshot=${out}`, `file://${path.resolve(file)}`])
  const png = readFileSync(out)
  rmSync(path.dirname(out), {recursive: true, force: true})
  return png
}

/** The visible text of an HTML document, roughly: tags dropped, entities of the page's escaping decoded. */
export function textOf(html: string): string {
  return html.replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>/g, ' ').replace(/<[^>]+>/g, ' ')
    .replace(/&#(\d+);/g, (_, n) => String.fromCharCode(Number(n))).replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>')
    .replace(/\s+/g, ' ')
}
