// Mounts the TUI. Only the `ui` command imports this module (dynamically), so Ink and React are
// loaded only when the TUI actually starts.
import {render} from 'ink'

import type {CheckReport} from '../report/report.js'
import {capabilities, type UiActions} from './actions.js'
import {App} from './components/App.js'
import {initialState} from './state.js'

export interface RunUiOptions {
  actions: UiActions
  report?: CheckReport
  loadError?: string // no report: why (the source has no kernel routes)
  live: boolean
  source: string
  refreshMs: number
  colorLevel: 0 | 1 | 2 | 3
}

const ALT_SCREEN_ON = '\x1b[?1049h'
const ALT_SCREEN_OFF = '\x1b[?1049l'

export async function runUi(opts: RunUiOptions): Promise<void> {
  const stdout = process.stdout
  const initial = initialState({
    report: opts.report, loadError: opts.loadError, live: opts.live, source: opts.source,
    capabilities: capabilities(opts.actions),
    size: {columns: stdout.columns || 80, rows: stdout.rows || 24},
  })
  // a full-screen program: draw on the alternate screen, give the shell its screen back on exit
  stdout.write(ALT_SCREEN_ON)
  try {
    const instance = render(
      <App
        initial={initial}
        actions={opts.actions}
        colorLevel={opts.colorLevel}
        refreshMs={opts.live ? opts.refreshMs : undefined}
      />,
      {exitOnCtrlC: false, patchConsole: true},
    )
    await instance.waitUntilExit()
  } finally {
    stdout.write(ALT_SCREEN_OFF)
  }
}
