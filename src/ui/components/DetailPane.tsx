import type {ChalkInstance} from 'chalk'

import type {UiState} from '../state.js'
import {paneLines, paneTitle} from '../view.js'
import {Lines} from './Lines.js'

/** The open pane (explanation, fix preview, apply result, bundle, help, host findings), scrolled. */
export function DetailPane({state, c}: {state: UiState; c: ChalkInstance}) {
  if (!state.pane) return null
  return <Lines lines={[paneTitle(state, c), ...paneLines(state, c)]} />
}
