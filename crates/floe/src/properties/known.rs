//! The names of the properties that floe knows: every name Ice 3.7 defines (from its
//! `config/PropertyNames.xml`, listed by `scripts/ice-property-names.py`), the names of the
//! IceStorm service, and the names floe reads besides (`Floe.*`, a few of Ice 3.8). A name
//! that starts with a checked prefix (`Ice.`, `IceSSL.`, `IceGrid.`, `IceStorm.`, `Glacier2.`,
//! `Floe.`, and Ice's other sections) and matches none of these is unknown: most likely a typo.
//!
//! The tables are strings of words separated by white space, read in place: a word is a
//! pattern, where `*` stands for one or more characters that are not white space, optionally
//! followed by `:class`, which stands for the pattern followed by a dot and any word of that
//! class (and the pattern alone, unless the class is prefix-only). An empty pattern before
//! `:class` stands for the words of the class right after the section.

/// Ice 3.7's classes of names: (class, whether the name of a property of the class is only a
/// prefix, the words after that prefix and a dot). `MaxConnections` and `MaxDispatches` of
/// `objectadapter` are floe's own (docs/properties.md).
const CLASSES: &[(&str, bool, &str)] = &[
    (
        "proxy",
        false,
        "EndpointSelection ConnectionCached PreferSecure LocatorCacheTimeout InvocationTimeout Locator Router \
        CollocationOptimized Context.*",
    ),
    ("acm", false, "Timeout Heartbeat Close"),
    // Ice 3.8's connection settings (`Ice.Connection.Client.*`, `<Adapter>.Connection.*`).
    ("connection", true, "IdleTimeout EnableIdleCheck InactivityTimeout ConnectTimeout CloseTimeout MaxDispatches"),
    ("threadpool", true, "Size SizeMax SizeWarn StackSize Serialize ThreadIdleTime ThreadPriority"),
    (
        "objectadapter",
        true,
        "ACM:acm AdapterId Endpoints Locator:proxy PublishedEndpoints ReplicaGroupId Router:proxy \
        ProxyOptions ThreadPool:threadpool MessageSizeMax \
        MaxConnections MaxDispatches Connection:connection",
    ),
    ("deprecatedthreadpool", true, "Size SizeMax SizeWarn StackSize"),
    (
        "deprecatedobjectadapter",
        true,
        "AdapterId Endpoints Locator PublishedEndpoints ReplicaGroupId Router ThreadPool:deprecatedthreadpool",
    ),
    ("mx", false, "GroupBy Map RetainDetached Accept Reject"),
];
/// Ice 3.7's names, by section (the first segment of the name).
const ICE_SECTIONS: &[(&str, &str)] = &[
    (
        "Ice",
        "AcceptClassCycles ACM.Client ACM.Server ACM:acm ACM.Client:acm ACM.Server:acm Admin:objectadapter \
        Admin.DelayCreation Admin.Enabled Admin.Facets Admin.InstanceName Admin.Logger.KeepLogs \
        Admin.Logger.KeepTraces Admin.Logger.Properties Admin.ServerId BackgroundLocatorCacheUpdates \
        BatchAutoFlush BatchAutoFlushSize ChangeUser ClassGraphDepthMax ClientAccessPolicyProtocol \
        Compression.Level CollectObjects Config ConsoleListener Default.CollocationOptimized \
        Default.EncodingVersion Default.EndpointSelection Default.Host Default.Locator:proxy \
        Default.LocatorCacheTimeout Default.InvocationTimeout Default.Package Default.PreferSecure \
        Default.Protocol Default.Router:proxy Default.SlicedFormat Default.SourceAddress Default.Timeout \
        EventLog.Source FactoryAssemblies HTTPProxyHost HTTPProxyPort ImplicitContext InitPlugins IPv4 IPv6 \
        LogFile LogFile.SizeMax LogStdErr.Convert MessageSizeMax Nohup NullHandleAbort Override.CloseTimeout \
        Override.Compress Override.ConnectTimeout Override.Timeout Override.Secure Package.* Plugin.* \
        PluginLoadOrder PreferIPv6Address PreloadAssemblies PrintAdapterReady PrintProcessId \
        PrintStackTraces ProgramName RetryIntervals ServerIdleTime SOCKSProxyHost SOCKSProxyPort StdErr \
        StdOut SyslogFacility ThreadPool.Client:threadpool ThreadPool.Server:threadpool ThreadPriority \
        ToStringMode Trace.Admin.Properties Trace.Admin.Logger Trace.Locator Trace.Network Trace.Protocol \
        Trace.Retry Trace.Slicing Trace.ThreadPool UDP.RcvSize UDP.SndSize TCP.Backlog TCP.RcvSize \
        TCP.SndSize UseApplicationClassLoader UseOSLog UseSyslog UseSystemdJournal Warn.AMICallback \
        Warn.Connections Warn.Datagrams Warn.Dispatch Warn.Endpoints Warn.UnknownProperties \
        Warn.UnusedProperties CacheMessageBuffers ThreadInterruptSafe",
    ),
    ("IceMX", "Metrics.*:mx"),
    (
        "IceDiscovery",
        "Multicast:objectadapter Reply:objectadapter Locator:objectadapter Lookup Timeout RetryCount \
        LatencyMultiplier Address Port Interface DomainId",
    ),
    (
        "IceLocatorDiscovery",
        "Reply:objectadapter Locator:objectadapter Lookup Timeout RetryCount RetryDelay Address Port \
        Interface InstanceName Trace.Lookup",
    ),
    (
        "IceBox",
        "InheritProperties InstanceName LoadOrder PrintServicesReady Service.* \
        ServiceManager:deprecatedobjectadapter Trace.ServiceObserver UseSharedCommunicator.*",
    ),
    ("IceBoxAdmin", "ServiceManager.Proxy:proxy"),
    ("IceBridge", "Source:objectadapter Target.Endpoints InstanceName"),
    (
        "IceGridAdmin",
        "AuthenticateUsingSSL MetricsConfig Username Password Replica Host Port InstanceName \
        Server:objectadapter Discovery.Address Discovery.Interface Discovery.Lookup \
        Discovery.Reply:objectadapter Discovery.Locator:objectadapter Trace.Observers Trace.SaveToRegistry",
    ),
    (
        "IceGrid",
        "AdminRouter:objectadapter InstanceName Node:objectadapter Node.AllowRunningServersAsRoot \
        Node.AllowEndpointsOverride Node.CollocateRegistry Node.Data Node.DisableOnFailure Node.Name \
        Node.Output Node.ProcessorSocketCount Node.PrintServersReady Node.PropertiesOverride \
        Node.RedirectErrToOut Node.Trace.Activator Node.Trace.Adapter Node.Trace.Admin Node.Trace.Patch \
        Node.Trace.Replica Node.Trace.Server Node.UserAccounts Node.UserAccountMapper:proxy Node.WaitTime \
        Registry.AdminCryptPasswords Registry.AdminPermissionsVerifier:proxy Registry.AdminSessionFilters \
        Registry.AdminSessionManager:objectadapter Registry.AdminSSLPermissionsVerifier:proxy \
        Registry.Client:objectadapter Registry.CryptPasswords Registry.DefaultTemplates \
        Registry.Discovery:objectadapter Registry.Discovery.Enabled Registry.Discovery.Address \
        Registry.Discovery.Port Registry.Discovery.Interface Registry.DynamicRegistration \
        Registry.Internal:objectadapter Registry.LMDB.MapSize Registry.LMDB.Path Registry.NodeSessionTimeout \
        Registry.PermissionsVerifier:proxy Registry.ReplicaName Registry.ReplicaSessionTimeout \
        Registry.RequireNodeCertCN Registry.RequireReplicaCertCN Registry.Server:objectadapter \
        Registry.SessionFilters Registry.SessionManager:objectadapter Registry.SessionTimeout \
        Registry.SSLPermissionsVerifier:proxy Registry.Trace.Admin Registry.Trace.Application \
        Registry.Trace.Adapter Registry.Trace.Discovery Registry.Trace.Locator Registry.Trace.Node \
        Registry.Trace.Object Registry.Trace.Patch Registry.Trace.Replica Registry.Trace.Server \
        Registry.Trace.Session Registry.Trace.Subscriber Registry.Trace.Topic Registry.Trace.TopicManager \
        Registry.UserAccounts",
    ),
    ("IcePatch2", ":objectadapter Directory InstanceName"),
    ("IcePatch2Client", "ChunkSize Directory Proxy Remove Thorough"),
    (
        "IceSSL",
        "Alias CAs CertAuthDir CertAuthFile CertStore CertStoreLocation CertFile CertVerifier CheckCertName \
        CheckCRL Ciphers CertificateRevocationListFiles DefaultDir DH.* DHParams EntropyDaemon FindCert \
        FindCert.* InitOpenSSL KeyFile Keychain KeychainPassword Keystore KeystorePassword KeystoreType \
        Password PasswordCallback PasswordRetryMax Protocols ProtocolVersionMax ProtocolVersionMin Random \
        RevocationCheck RevocationCheckCacheOnly SchannelStrongCrypto Trace.Security TrustOnly \
        TrustOnly.Client TrustOnly.Server TrustOnly.Server.* Truststore TruststorePassword TruststoreType \
        UsePlatformCAs VerifyDepthMax VerifyPeer",
    ),
    ("IceStormAdmin", "TopicManager.* Host Port"),
    ("IceBT", "RcvSize SndSize"),
    (
        "Glacier2",
        "AddConnectionContext Client:objectadapter Client.AlwaysBatch Client.Buffered Client.ForwardContext \
        Client.SleepTime Client.Trace.Override Client.Trace.Reject Client.Trace.Request CryptPasswords \
        Filter.Address.Reject Filter.Address.Accept Filter.ProxySizeMax Filter.Category.Accept \
        Filter.Category.AcceptUser Filter.AdapterId.Accept Filter.Identity.Accept InstanceName \
        PermissionsVerifier:proxy ReturnClientProxy SSLPermissionsVerifier:proxy RoutingTable.MaxSize \
        Server:objectadapter Server.AlwaysBatch Server.Buffered Server.ForwardContext Server.SleepTime \
        Server.Trace.Override Server.Trace.Request SessionManager:proxy SSLSessionManager:proxy \
        SessionTimeout Trace.RoutingTable Trace.Session",
    ),
    ("Glacier2CryptPermissionsVerifier", "*.PermissionsVerifier *.AdminPermissionsVerifier"),
    (
        "Freeze",
        "DbEnv.*.CheckpointPeriod DbEnv.*.DbHome DbEnv.*.DbPrivate DbEnv.*.DbRecoverFatal \
        DbEnv.*.EncodingVersion DbEnv.*.LockFile DbEnv.*.OldLogsAutoDelete DbEnv.*.PeriodicCheckpointMinSize \
        Evictor.*.BtreeMinKey Evictor.*.Checksum Evictor.*.MaxTxSize Evictor.*.PageSize \
        Evictor.*.PopulateEmptyIndices Evictor.*.RollbackOnUserException Evictor.*.SavePeriod \
        Evictor.*.SaveSizeTrigger Evictor.*.StreamTimeout Map.*.BtreeMinKey Map.*.Checksum Map.*.PageSize \
        Trace.DbEnv Trace.Evictor Trace.Map Trace.Transaction Warn.Deadlocks Warn.Rollback",
    ),
];

/// Sections floe adds: IceStorm's names, for its usual service name `IceStorm` (Ice checks
/// these per service when the service starts), and floe's own.
const FLOE_SECTIONS: &[(&str, &str)] = &[
    (
        "IceStorm",
        "TopicManager:objectadapter Publish:objectadapter Node:objectadapter TopicManager.Proxy:proxy \
        ReplicatedTopicManagerEndpoints ReplicatedPublishEndpoints Nodes.* Transient NodeId Flush.Timeout \
        InstanceName Election.MasterTimeout Election.ElectionTimeout Election.ResponseTimeout Trace.Election \
        Trace.Replication Trace.Subscriber Trace.Topic Trace.TopicManager Send.Timeout Send.QueueSizeMax \
        Send.QueueSizeMaxPolicy Discard.Interval LMDB.Path LMDB.MapSize",
    ),
    (
        "Floe",
        "Connection.PartialMessageTimeout Malloc.Tune MaxDispatchesPerConnection Metrics.Prometheus.Endpoints Runtime.BusyPoll \
        Runtime.BusyPoll.SpareCpuOnly Runtime.ConnectionThreads Runtime.ConnectionThreads.MaxConnections \
        Runtime.Threads Registry.AdapterCheck.Failures Registry.AdapterCheck.Interval Registry.Etcd.Endpoints \
        Registry.Etcd.LeaseTTL Registry.Etcd.Prefix Registry.Etcd.Timeout Registry.ReplicaGroup.* \
        Storm.Etcd.Endpoints Storm.Etcd.LeaseTTL Storm.Etcd.Prefix Storm.Etcd.Timeout Storm.QueueBytesMax",
    ),
    // Names floe reads in Ice's sections that Ice 3.7 does not define: Ice 3.8's connection
    // settings, floe's earlier names of the idle timeout, and the registry's data directory
    // (Ice 3.6's name, kept for old configurations).
    (
        "Ice",
        "Connection.Client:connection Connection.Server:connection Connection.IdleTimeout Connection.EnableIdleCheck",
    ),
    ("IceGrid", "Registry.Data"),
];

/// Whether `name` starts with a prefix whose names are checked: the name of a section
/// followed by a dot, compared without regard to ASCII case, as Ice does.
pub fn is_checked(name: &str) -> bool {
    section_of(name).is_some()
}

/// Whether `name` is a property name that floe knows, or one it does not check (a name
/// outside the checked prefixes, such as `MyAdapter.Endpoints`). Matching is exact, case
/// included: `Ice.messagesizemax` is unknown (see [`suggestion`]).
pub fn is_known(name: &str) -> bool {
    match section_of(name) {
        None => true,
        Some((section, rest)) => sections().any(|(s, words)| s == section && find(words, rest, false, None)),
    }
}

/// For an unknown name that matches a known one when ASCII case is ignored, that name (a
/// pattern, with `*` where any characters go), as Ice suggests it: `Ice.MessageSizeMax` for
/// `ice.messagesizemax`.
pub fn suggestion(name: &str) -> Option<String> {
    if is_known(name) {
        return None;
    }
    let (section, rest) = section_of(name)?;
    sections().filter(|(s, _)| s.eq_ignore_ascii_case(section)).find_map(|(s, words)| {
        let mut found = format!("{s}.");
        find(words, rest, true, Some(&mut found)).then_some(found)
    })
}

/// Whether `name` matches `pattern`, where each `*` stands for one or more characters that
/// are not white space (`Ice.Plugin.*`, `MyService.*.Endpoints`).
pub fn matches_pattern(pattern: &str, name: &str) -> bool {
    glob(pattern, name, false)
}

fn sections() -> impl Iterator<Item = (&'static str, &'static str)> {
    ICE_SECTIONS.iter().chain(FLOE_SECTIONS).copied()
}

/// The section and the rest of `name`, when the section is a checked one.
fn section_of(name: &str) -> Option<(&str, &str)> {
    let (section, rest) = name.split_once('.')?;
    sections().any(|(s, _)| s.eq_ignore_ascii_case(section)).then_some((section, rest))
}

/// Whether `s` matches one of `words` (the table syntax of the module doc), ignoring ASCII
/// case when `fold`; `found` gets the patterns of the match appended.
fn find(words: &str, s: &str, fold: bool, mut found: Option<&mut String>) -> bool {
    for word in words.split_ascii_whitespace() {
        let (pattern, class) = match word.split_once(':') {
            None => (word, None),
            Some((pattern, class)) => (pattern, CLASSES.iter().find(|(c, _, _)| *c == class)),
        };
        let Some(&(_, prefix_only, suffixes)) = class else {
            if glob(pattern, s, fold) {
                found.into_iter().for_each(|f| f.push_str(pattern));
                return true;
            }
            continue;
        };
        if pattern.is_empty() {
            if find(suffixes, s, fold, found.as_deref_mut()) {
                return true;
            }
            continue;
        }
        if !prefix_only && glob(pattern, s, fold) {
            found.into_iter().for_each(|f| f.push_str(pattern));
            return true;
        }
        for (i, _) in s.match_indices('.') {
            if !glob(pattern, &s[..i], fold) {
                continue;
            }
            let mark = found.as_deref().map_or(0, String::len);
            if let Some(f) = found.as_deref_mut() {
                f.push_str(pattern);
                f.push('.');
            }
            if find(suffixes, &s[i + 1..], fold, found.as_deref_mut()) {
                return true;
            }
            if let Some(f) = found.as_deref_mut() {
                f.truncate(mark);
            }
        }
    }
    false
}

fn glob(pattern: &str, s: &str, fold: bool) -> bool {
    let same = |a: &str, b: &str| if fold { a.eq_ignore_ascii_case(b) } else { a == b };
    match pattern.split_once('*') {
        None => same(pattern, s),
        Some((head, tail)) => {
            s.get(..head.len()).is_some_and(|h| same(h, head)) && {
                let rest = &s[head.len()..];
                rest.char_indices()
                    .take_while(|(_, c)| !c.is_whitespace())
                    .any(|(i, c)| glob(tail, &rest[i + c.len_utf8()..], fold))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_patterns() {
        for known in [
            "Ice.MessageSizeMax",
            "Ice.ThreadPool.Server.Size",
            "Ice.Default.Locator",
            "Ice.Default.Locator.EndpointSelection",
            "Ice.Default.Locator.Context.tenant",
            "Ice.Admin.Endpoints",
            "Ice.Admin.ACM.Timeout",
            "Ice.Admin.Router.Context.x.y",
            "Ice.ACM.Client.Heartbeat",
            "Ice.Plugin.IceSSL",
            "Ice.Connection.IdleTimeout",
            "Ice.Connection.Client.IdleTimeout",
            "Ice.Connection.Server.MaxDispatches",
            "MyAdapter.Connection.InactivityTimeout",
            "Ice.Admin.Connection.CloseTimeout",
            "IceGrid.Registry.Client.Connection.EnableIdleCheck",
            "IceMX.Metrics.ByOp.GroupBy",
            "IceMX.Metrics.Debug",
            "IceSSL.CertFile",
            "IceGrid.Registry.Client.Endpoints",
            "IceGrid.Registry.Client.ThreadPool.SizeMax",
            "IceGrid.Registry.Client.MaxDispatches",
            "IcePatch2.Endpoints",
            "IceBox.ServiceManager.ThreadPool.Size",
            "Glacier2.Client.Endpoints",
            "Glacier2.Filter.Category.Accept",
            "IceStorm.TopicManager.Endpoints",
            "IceStorm.Publish.ThreadPool.Size",
            "IceStorm.Trace.Subscriber",
            "Floe.Runtime.BusyPoll",
            "Floe.Registry.ReplicaGroup.g1.Priority.a1",
            "MyAdapter.Endpoints",
            "MyAdapter.Whatever",
            "NoDot",
        ] {
            assert!(is_known(known), "{known}");
        }
        for unknown in [
            "Ice.MessageSizeMaxx",
            "Ice.messagesizemax",
            "ice.MessageSizeMaxx",
            "Ice.ThreadPool.Server.Sise",
            "Ice.ThreadPool.Server",
            "Ice.Admin",
            "Ice.Default.Locator.Context",
            "Ice.Plugin.",
            "IceMX.Metrics",
            "IceSSL.CertFil",
            "IceGrid.Registry.Client.Endpoint",
            "IceStorm.Foo",
            "Glacier2.Foo",
            "Floe.Runtime.BusyPol",
            "Floe.",
        ] {
            assert!(!is_known(unknown), "{unknown}");
        }
        assert!(is_checked("iceSSL.X") && !is_checked("MyAdapter.Endpoints") && !is_checked("Ice"));
        assert!(matches_pattern("My.*.Endpoints", "My.a.b.Endpoints") && !matches_pattern("My.*", "My."));
        assert!(!matches_pattern("My.*", "My.a b"));
        assert_eq!(suggestion("ice.messagesizemax").as_deref(), Some("Ice.MessageSizeMax"));
        assert_eq!(suggestion("Ice.default.locator.context.x").as_deref(), Some("Ice.Default.Locator.Context.*"));
        assert_eq!(
            suggestion("icegrid.registry.client.threadpool.size").as_deref(),
            Some("IceGrid.Registry.Client.ThreadPool.Size")
        );
        assert_eq!(suggestion("Ice.MessageSizeMaxx"), None);
        assert_eq!(suggestion("Ice.MessageSizeMax"), None);
    }

    #[test]
    fn every_class_exists() {
        for (_, words) in sections().chain(CLASSES.iter().map(|(_, _, w)| ("", *w))) {
            for class in words.split_ascii_whitespace().filter_map(|w| w.split_once(':')).map(|(_, c)| c) {
                assert!(CLASSES.iter().any(|(c, _, _)| *c == class), "{class}");
            }
        }
    }
}
