/** One dsh session as the bundle keeps it, and the small pieces around it. */

import { existsSync } from 'node:fs'
import { dirname, join } from 'node:path'

export class SessionState {
  constructor(agent) {
    const header = agent.session?.header ?? {}
    this.id = String(agent.id)
    this.cwd = header.cwd ?? process.cwd()
    this.depth = Number.isInteger(header.delegationDepth) ? header.delegationDepth : 0
    this.started = Promise.resolve()
    this.assembly = undefined
    this.serverIdentity = []
    this.constant = new Map()
    this.preload = undefined
    this.preloadGiven = false
    this.sessionBlocks = []
    this.turnBlocks = []
    this.compacting = undefined
    // Typed prompts claimed for the coming step, and their `user-prompt` call.
    this.pendingPrompt = []
    this.prompting = undefined
  }
}

export function textOf(message) {
  return (message.content ?? [])
    .filter(block => block.type === 'text' && typeof block.text === 'string')
    .map(block => block.text)
    .join('\n')
}

/**
 * Section text shown as written. dsh interpolates `{{name}}` in sections and
 * fails the whole assembly on an unknown one, with no escape: a `{{` in
 * AGENT.md or a core fact must not stop the agent. (File contents are never
 * substituted, as the MEMFLOW design says.)
 */
export function literal(text) {
  return text.replaceAll('{{', '{\u200b{')
}

export function preloadMessage(text) {
  return Object.freeze({
    id: crypto.randomUUID(),
    role: 'user',
    content: Object.freeze([Object.freeze({ type: 'text', text })]),
    source: Object.freeze({ kind: 'plugin', plugin: 'memflow' }),
  })
}

/** The nearest ancestor holding `.git`, else the directory itself (as `memflow hook`). */
export function projectRoot(cwd) {
  for (let dir = cwd; ; dir = dirname(dir)) {
    if (existsSync(join(dir, '.git'))) return dir
    if (dirname(dir) === dir) return cwd
  }
}

export function dshContextEnv() {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith('DSH_CONTEXT_')))
  return Object.keys(env).length > 0 ? { env } : {}
}

/** `promise`, or nothing once `ms` have passed (it goes on in the background). */
export function within(promise, ms) {
  let timer
  const timeout = new Promise(resolve => { timer = setTimeout(resolve, ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
