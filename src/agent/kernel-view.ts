// The kernel as `watch` holds it between full diagnoses: its IPv4 routes (netlink/route-store.ts) and the keys of
// routedoctor's own routes of every family (netlink/events.ts ProtocolRoutes), read in one dump and then kept from
// the notifications. Read again when notifications were lost (the socket overflowed: ENOBUFS) and when a device that
// carries routes goes down, comes up or goes away (the kernel flushes or marks its routes without a notification).
import {ProtocolRoutes, watchKernel, type KernelEvent, type KernelEventStream} from '../netlink/events.js'
import {KernelRouteStore, type LinkChange} from '../netlink/route-store.js'

export interface KernelViewHandlers {
  /** Notifications, applied already; the devices whose state changed among them. */
  events(events: KernelEvent[], links: LinkChange[]): void
  /** Notifications were lost: the view is read again. */
  lost(error: Error): void
  /**
   * A read finished: the keys whose routes differ from those held before; `recovered` after a loss or a failed read.
   */
  reread(changed: Set<number>, recovered: boolean): void
  /** A read failed: the store is behind the kernel (or empty) until a read again succeeds. */
  failed(error: Error): void
}

export class KernelView {
  readonly own: ProtocolRoutes
  readonly store = new KernelRouteStore()
  private stream: KernelEventStream | undefined
  private reading: Promise<void> | undefined
  private again = false
  private closed = false
  private troubles = 0 // notifications lost and reads failed so far
  private recoveredFrom = 0 // the troubles a completed read has made up for

  constructor(protocol: number, private readonly on: KernelViewHandlers) {
    this.own = new ProtocolRoutes(protocol)
  }

  /**
   * Subscribes first, reads second: a route written in between is in one or the other (both: one key). A failed
   * subscription throws; a failed read is reported (`failed`) and the store stays unloaded until a read again succeeds.
   */
  async start(): Promise<void> {
    this.stream = await watchKernel((events) => {
      this.own.apply(events)
      const links = this.store.apply(events)
      this.on.events(events, links)
    }, (error) => {
      this.troubles++
      this.on.lost(error)
      this.reread()
    })
    this.reread()
    await this.settled()
  }

  /** Whether a read again is under way (what the store holds may be behind the kernel). */
  get busy(): boolean {
    return this.reading !== undefined
  }

  /** Reads the kernel's routes again; once more after the read under way, when one is. */
  reread(): void {
    if (this.closed) return
    if (this.reading) {
      this.again = true
      return
    }
    const troubles = this.troubles
    this.reading = this.read().then((changed) => {
      if (this.closed) return
      const recovered = this.recoveredFrom < troubles && troubles === this.troubles
      if (recovered) this.recoveredFrom = troubles
      this.on.reread(changed, recovered)
    }, (error: Error) => {
      if (this.closed) return
      this.troubles++
      this.on.failed(error)
    }).finally(() => {
      this.reading = undefined
      if (this.again) {
        this.again = false
        this.reread()
      }
    })
  }

  /** Resolves once no read again is under way. */
  async settled(): Promise<void> {
    while (this.reading) await this.reading
  }

  private async read(): Promise<Set<number>> {
    this.own.begin()
    try {
      const changed = await this.store.load((buf, start, end) => this.own.visit(buf, start, end))
      this.own.commit()
      return changed
    } finally {
      this.own.abort()
    }
  }

  /** Stops the notifications and any read again: none starts and no handler is called after this. */
  close(): void {
    this.closed = true
    this.again = false
    this.stream?.close()
  }
}
