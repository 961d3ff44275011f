import {useEffect, useMemo} from 'react'
import {Box, useApp, useInput, useStdout} from 'ink'
import {Chalk} from 'chalk'

import type {UiActions} from '../actions.js'
import {useController} from '../controller.js'
import type {UiState} from '../state.js'
import {DetailPane} from './DetailPane.js'
import {Footer} from './Footer.js'
import {Header} from './Header.js'
import {PrefixList} from './PrefixList.js'

export interface AppProps {
  initial: UiState
  actions: UiActions
  /** colour level: 0 with NO_COLOR */
  colorLevel: 0 | 1 | 2 | 3
  /** live refresh period; absent = no automatic refresh (--from) */
  refreshMs?: number
  /** follow the terminal's size (false in tests that fix the size in `initial`) */
  followSize?: boolean
  onExit?: () => void
}

export function App({initial, actions, colorLevel, refreshMs, followSize = true, onExit}: AppProps) {
  const c = useMemo(() => new Chalk({level: colorLevel}), [colorLevel])
  const {exit} = useApp()
  const {stdout} = useStdout()
  const [state, dispatch] = useController(initial, actions, c, () => {
    onExit?.()
    exit()
  })

  useInput((input, key) => dispatch({type: 'key', input, key}))

  useEffect(() => {
    if (!followSize) return
    const onResize = () => dispatch({type: 'resize', columns: stdout.columns || 80, rows: stdout.rows || 24})
    onResize()
    stdout.on('resize', onResize)
    return () => {
      stdout.off('resize', onResize)
    }
  }, [stdout, followSize, dispatch])

  useEffect(() => {
    if (!refreshMs) return
    const timer = setInterval(() => dispatch({type: 'tick', now: Date.now()}), refreshMs)
    return () => clearInterval(timer)
  }, [refreshMs, dispatch])

  return (
    <Box flexDirection="column" width={state.size.columns}>
      <Header state={state} c={c} />
      <PrefixList state={state} c={c} />
      <DetailPane state={state} c={c} />
      <Footer state={state} c={c} />
    </Box>
  )
}
