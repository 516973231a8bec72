/**
 * A stand-in for the parts of dsh (0.1.1-rc.2) the bundle touches, with the
 * same shapes: `ctx.on` for emits and waterfalls (listener(...args, next)),
 * `ctx.systemPrompt.section/context` with providers evaluated per assembly,
 * agents with `id` and `session.header`, user messages with `source.kind`,
 * tool results as `{ isError, content: ContentBlock[] }` and the
 * `tools/post-execute` decision `{ kind: 'accept', content? }`.
 *
 * `step()` runs what dsh's driver does for one step: the `agent/pre-step`
 * waterfall, then one prompt assembly; it answers with what the model sees.
 */

import { randomUUID } from 'node:crypto'

export class FakeHarness {
  constructor() {
    this.listeners = new Map()
    this.sections = []
    this.contexts = []
    this.warnings = []
    const harness = this
    this.ctx = {
      logger: { warn: (...args) => harness.warnings.push(args), info: () => {} },
      on(event, listener) {
        const list = harness.listeners.get(event) ?? []
        list.push(listener)
        harness.listeners.set(event, list)
        return () => list.splice(list.indexOf(listener), 1)
      },
      systemPrompt: {
        section(section) {
          if (harness.sections.some(s => s.name === section.name)) throw new Error(`duplicate section ${section.name}`)
          if (!Number.isFinite(section.order)) throw new Error(`non-finite order for ${section.name}`)
          harness.sections.push(section)
          return () => {}
        },
        context(context) {
          if (harness.contexts.some(c => c.name === context.name)) throw new Error(`duplicate context ${context.name}`)
          harness.contexts.push(context)
          return () => {}
        },
      },
    }
  }

  /** Load a plugin module the way Cordis calls it: `apply(ctx, config)`. */
  load(plugin, config = {}) {
    for (const service of plugin.inject ?? []) {
      if (this.ctx[service] === undefined) throw new Error(`service ${service} missing`)
    }
    plugin.apply(this.ctx, config)
  }

  emit(event, ...args) {
    for (const listener of this.listeners.get(event) ?? []) listener(...args)
  }

  /** Listeners in registration order; each `next()` runs the rest, the last the default. */
  async waterfall(event, args, fallback) {
    const list = [...(this.listeners.get(event) ?? [])]
    const run = async (index) => (index < list.length ? list[index](...args, () => run(index + 1)) : fallback())
    return run(0)
  }

  agent(cwd, id = `session-${randomUUID()}`) {
    const session = { id, header: { id, cwd, delegationDepth: 0 }, events: [] }
    return { id, session }
  }

  startSession(agent, source = 'startup') {
    this.emit('agent/session-start', { agent, source })
  }

  /** One step: pre-step, then assembly. `typed` are the messages claimed for it. */
  async step(agent, typed = [], { turn = 1, step = 1 } = {}) {
    const messages = typed.map(text => userMessage(text))
    const controller = new AbortController()
    const decision = await this.waterfall(
      'agent/pre-step',
      [{ agent, messages, turn, step, signal: controller.signal }],
      async () => ({ kind: 'enter', messages: [...messages] }),
    )
    return { decision, ...this.assemble(agent) }
  }

  /** What the model is sent: the system prompt, and the runtime-context snapshot. */
  assemble(agent) {
    const context = { scope: agent.id, agent }
    const resolve = list => [...list]
      .sort((a, b) => a.order - b.order)
      .map(entry => (typeof entry.text === 'function' ? entry.text(context) : entry.text))
      .filter(text => text.length > 0)
    return { system: resolve(this.sections).map(interpolate).join('\n\n'), context: resolve(this.contexts).join('\n\n') }
  }

  /** A tool call's result as the model will see it, after `tools/post-execute`. */
  async toolResult(agent, name, args, text, { isError = false } = {}) {
    const result = isError
      ? { isError: true, error: { code: 'tool-error', message: 'failed' }, content: [{ type: 'text', text }] }
      : { isError: false, value: text, content: [{ type: 'text', text }] }
    const exec = { name, arguments: args, agent, callId: `call-${randomUUID()}`, signal: new AbortController().signal }
    const decision = await this.waterfall('tools/post-execute', [exec, result], async () => ({ kind: 'accept' }))
    const content = decision.kind === 'accept' && decision.content ? decision.content : result.content
    return { decision, text: content.map(block => block.text).join('') }
  }

  /** A durable session event, as `session/event` delivers it. */
  event(agent, type, data) {
    const event = { type, seq: agent.session.events.length, time: Date.now(), data }
    agent.session.events.push(event)
    this.emit('session/event', agent.session, event)
  }
}

// dsh's renderPrompt: `{{name}}` is a variable (the loop registers model and
// cwd); an unknown one, or a `{{` left open before a `}}`, fails the assembly.
const VARIABLES = { model: 'deepseek-chat', cwd: '/' }
function interpolate(text) {
  return text.replace(/\{\{([^{}]*)\}\}|\{\{(?=[\s\S]*\}\})/g, (match, name) => {
    if (name !== undefined && Object.hasOwn(VARIABLES, name)) return VARIABLES[name]
    throw new Error(`prompt assembly failed: unknown or malformed ${JSON.stringify(match)}`)
  })
}

export function userMessage(text, kind = 'user') {
  return Object.freeze({ id: randomUUID(), role: 'user', content: [{ type: 'text', text }], source: { kind } })
}
