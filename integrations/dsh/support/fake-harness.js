/**
 * A stand-in for the parts of dsh the bundle touches, for the bundle's unit
 * tests, with dsh's shapes and — above all — its step order (the agent
 * loop's `preStep` in 0.1.0-rc.8 and 0.1.1-rc.2 alike):
 *
 *   1. the inbox claims the step's messages (`agent/inbox/claimed`, one emit
 *      per message, listeners not awaited);
 *   2. the system prompt and the runtime context are assembled: section and
 *      context providers are evaluated synchronously, then the awaited
 *      `system-prompt/assemble` waterfall may transform the assembly;
 *   3. only then the `agent/pre-step` waterfall runs, its default decision
 *      entering the claimed messages and the runtime-context message.
 *
 * Also: `ctx.on` for emits and waterfalls (listener(...args, next)),
 * `ctx.tools.register`, `ctx.effect` disposers run (and awaited) at
 * `dispose()`, agents with `id` and `session.header`, user messages with
 * `source.kind`, tool results as `{ isError, content: ContentBlock[] }` and
 * the `tools/post-execute` decision `{ kind: 'accept', content? }`. The real
 * dsh drives the bundle in tests/dsh.
 */

import { randomUUID } from 'node:crypto'

const RUNTIME_CONTEXT = 'Current runtime context. This snapshot supersedes earlier runtime-context snapshots.'

export class FakeHarness {
  constructor() {
    this.listeners = new Map()
    this.sections = []
    this.contexts = []
    this.warnings = []
    this.tools = new Map()
    this.disposers = []
    const harness = this
    this.ctx = {
      logger: { warn: (...args) => harness.warnings.push(args), info: () => {} },
      on(event, listener) {
        const list = harness.listeners.get(event) ?? []
        list.push(listener)
        harness.listeners.set(event, list)
        return () => list.splice(list.indexOf(listener), 1)
      },
      effect(execute) {
        const dispose = execute()
        if (typeof dispose === 'function') harness.disposers.push(dispose)
        return () => {}
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
      tools: {
        register(definition) {
          if (harness.tools.has(definition.name)) throw new Error(`duplicate tool ${definition.name}`)
          if (typeof definition.output?.render !== 'function') throw new TypeError(`tool "${definition.name}" must declare output { schema, render }`)
          harness.tools.set(definition.name, definition)
          return () => harness.tools.delete(definition.name)
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

  /** The plugin's disposal (dsh exiting): its effects' disposers, awaited. */
  async dispose() {
    for (const dispose of this.disposers.splice(0).reverse()) await dispose()
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

  /**
   * One step in dsh's order: claim, assemble, pre-step. `typed` are the
   * messages entering it. Answers with the decision and what the model is
   * sent: the system prompt and the runtime-context snapshot.
   */
  async step(agent, typed = [], { turn = 1, step = 1 } = {}) {
    const messages = typed.map(text => userMessage(text))
    for (const message of messages) this.emit('agent/inbox/claimed', { agent, message, turn })
    const controller = new AbortController()
    const { system, context, tools } = await this.assemble(agent, controller.signal)
    const runtime = context ? [userMessage(`${RUNTIME_CONTEXT}\n\n${context}`, 'runtime-context')] : []
    const decision = await this.waterfall(
      'agent/pre-step',
      [{ agent, messages, turn, step, signal: controller.signal }],
      async () => ({ kind: 'enter', messages: [...messages, ...runtime] }),
    )
    return { decision, system, context, tools }
  }

  /** Providers evaluated, then the `system-prompt/assemble` waterfall, then rendering. */
  async assemble(agent, signal) {
    const context = { scope: agent, agent, ...(signal ? { signal } : {}) }
    const evaluate = list => [...list]
      .sort((a, b) => a.order - b.order)
      .map(entry => ({ name: entry.name, text: typeof entry.text === 'function' ? entry.text(context) : entry.text }))
    const tools = [...this.tools.values()]
      .map(({ name, description, parameters }) => ({ name, description, parameters }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    const assembly = { sections: evaluate(this.sections), contexts: evaluate(this.contexts), tools, variables: {} }
    const done = await this.waterfall('system-prompt/assemble', [assembly, context], async () => assembly)
    const render = entries => entries.map(entry => interpolate(entry.text)).filter(text => text.length > 0).join('\n\n')
    return { system: render(done.sections), context: render(done.contexts), tools: done.tools.map(tool => tool.name) }
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
