import type {ChalkInstance} from 'chalk'

import type {UiState} from '../state.js'
import {columnTitle, listLines} from '../view.js'
import {Lines} from './Lines.js'

/** The pool prefixes with their verdicts, errors first; one truncated row each. */
export function PrefixList({state, c}: {state: UiState; c: ChalkInstance}) {
  return <Lines lines={[columnTitle(state, c), ...listLines(state, c)]} />
}
