// The hook that holds UiState: dispatch(event) runs the pure update and then the effects it returns.
import {useCallback, useRef, useState} from 'react'
import type {ChalkInstance} from 'chalk'

import type {UiActions} from './actions.js'
import {runEffect} from './effects.js'
import {update, type UiEvent, type UiState} from './state.js'

export function useController(
  initial: UiState,
  actions: UiActions,
  c: ChalkInstance,
  exit: () => void,
): [UiState, (e: UiEvent) => void] {
  const [state, setState] = useState(initial)
  const ref = useRef(initial)
  const exitRef = useRef(exit)
  exitRef.current = exit
  const dispatch = useCallback((event: UiEvent) => {
    const {state: next, effects} = update(ref.current, event)
    ref.current = next
    setState(next)
    for (const effect of effects) void runEffect(effect, actions, c, dispatch, () => exitRef.current())
  }, [actions, c])
  return [state, dispatch]
}
