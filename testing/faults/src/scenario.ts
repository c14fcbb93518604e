// The contract between the fault runner and each fault kind. A scenario injects one
// kind of fault into a real run (real processes, real kills, loopback fakes) and says
// whether the user could carry on afterwards and how many committed events were lost.

export interface FaultOutcome {
  /** The session (or the product) was left in a state the user can continue from. */
  survived: boolean;
  /** Events that were durably committed before the fault and are missing after it. */
  lost: number;
  /** Why it did not survive, or anything worth printing next to the row. */
  note?: string;
}

export interface FaultScenario {
  /** Short name printed in the table's "fault" column. */
  name: string;
  /** Which point of the reliability issue it proves (for the table's footnote). */
  proves: string;
  /** Runs in the long loop (`npm run faults`); at least 20 for kill scenarios. */
  runs: number;
  /** One run. `index` varies the injection point (kill delay, step) between runs. */
  run(index: number): Promise<FaultOutcome>;
}
