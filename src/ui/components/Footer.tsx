import type {ChalkInstance} from 'chalk'

import type {UiState} from '../state.js'
import {footerLine} from '../view.js'
import {Lines} from './Lines.js'

/** Key hints, a notice, or the y/N confirmation before applying. */
export function Footer({state, c}: {state: UiState; c: ChalkInstance}) {
  return <Lines lines={[footerLine(state, c)]} />
}
