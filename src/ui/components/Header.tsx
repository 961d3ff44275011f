import type {ChalkInstance} from 'chalk'

import type {UiState} from '../state.js'
import {headerLines} from '../view.js'
import {Lines} from './Lines.js'

/** Node, BIRD version, sessions up/total, source; then the summary or the filter being typed. */
export function Header({state, c}: {state: UiState; c: ChalkInstance}) {
  return <Lines lines={headerLines(state, c)} />
}
