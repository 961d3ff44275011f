import {Box, Text} from 'ink'

/** Lines already fitted to the width by the view: shown as they are, one terminal row each. */
export function Lines({lines}: {lines: string[]}) {
  return (
    <Box flexDirection="column">
      {lines.map((l, i) => <Text key={i} wrap="truncate-end">{l === '' ? ' ' : l}</Text>)}
    </Box>
  )
}
