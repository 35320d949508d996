// Package dispatch is how a fire reaches code. The engine hands every fire to one
// engine.Dispatcher; a job's TargetKind decides where it goes:
//
//   - local jobs run a handler registered in the node's own process (package sundial's
//     in-process path);
//   - remote jobs go to an executor of the job's app through Remote: the app's addresses are
//     its live registry instances (address mode auto, sorted by address) or its manual list;
//     the job's routing strategy picks the instance (or, for sharding-broadcast, every
//     instance with its shard index and total); the run is POSTed to the instance's /run with
//     the executor token (docs/executor-protocol.md), the chosen address is recorded on the
//     execution, and the execution stays running until the executor reports its result to
//     any node (Engine.CompleteRemote). A fire no instance takes fails with the reason, and
//     the engine applies the job's retries.
package dispatch
