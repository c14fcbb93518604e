// One loopback fake vendor for the whole benchmark run. Every harness talks to the same
// server; each run installs its own script handler, and the requests of a run are the ones
// recorded after it started.
import {
  type FakeVendor,
  type RecordedRequest,
  type ScriptedResponse,
  startFakeVendor,
} from "@pluggableharness/fake-vendors";

export type Handler = (request: RecordedRequest) => ScriptedResponse;

export class BenchFake {
  readonly vendor: FakeVendor;
  private handler: Handler = () => ({ kind: "text", text: "OK" });

  private constructor(vendor: FakeVendor) {
    this.vendor = vendor;
  }

  static async start(): Promise<BenchFake> {
    let self: BenchFake | undefined;
    const vendor = await startFakeVendor({
      vendor: "combined",
      script: (request) => self!.handler(request),
      // Every request is billed by prefix match as its vendor would (bench/lib/billing.ts).
      promptCache: true,
    });
    self = new BenchFake(vendor);
    return self;
  }

  get url(): string {
    return this.vendor.url;
  }

  /** Installs `handler` for the next run and returns a view of that run's requests. */
  beginRun(handler: Handler): RunRequests {
    this.handler = handler;
    // Every run starts cold: a fresh session, whose first request finds nothing cached.
    this.vendor.promptCache?.clear();
    return new RunRequests(this.vendor, this.vendor.requests.length, this.vendor.otherRequests.length);
  }

  close(): Promise<void> {
    return this.vendor.close();
  }
}

export class RunRequests {
  private readonly vendor: FakeVendor;
  private readonly from: number;
  private readonly otherFrom: number;

  constructor(vendor: FakeVendor, from: number, otherFrom: number) {
    this.vendor = vendor;
    this.from = from;
    this.otherFrom = otherFrom;
  }

  /** Model requests (messages, responses, chat, gemini) of this run, in arrival order. */
  get model(): RecordedRequest[] {
    return this.vendor.requests.slice(this.from);
  }

  get other(): RecordedRequest[] {
    return this.vendor.otherRequests.slice(this.otherFrom);
  }
}
