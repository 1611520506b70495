//! A sharded `serve`: one config run by several replicas, each running only the pipelines
//! that rendezvous hashing of their names gives its shard (`rendezvous.rs`); which shard a
//! replica is (`placement.rs`, from `[server] shard`, the hostname and `CONVSTREAM_SHARDS`);
//! the replica's share of the config at start and reload and its metrics (`replica.rs`);
//! the 421 for another shard's pipeline (`routing.rs`). The settings as written are checked
//! with the rest of the config (`config::shard_spec`).

mod placement;
mod rendezvous;
mod replica;
mod routing;

pub use convstream_config::shard_spec::{Shard, ShardError, ShardSpec, MAX_SHARDS};
pub use placement::{resolve, Placement, Surroundings, SHARDS_ENV};
pub use rendezvous::{owner, weight};
pub use replica::{ShardCollector, Sharding, ShardingError};
pub use routing::{route_to_owner, OWNER_POD_HEADER, OWNER_SHARD_HEADER};
