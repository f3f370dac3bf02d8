//! Connection settings from properties: Ice 3.8's connection properties
//! (`Ice.Connection.Client.*`, `Ice.Connection.Server.*`, `<Adapter>.Connection.*`), Ice 3.7's
//! ACM (`Ice.ACM.*`, `<Adapter>.ACM.*`) and timeouts (`Ice.Override.*`), and floe's own.

use std::time::Duration;

use crate::connection::{AcmConfig, ConnectionConfig};
use crate::error::{Error, Result};
use crate::properties::Properties;

/// A duration property in milliseconds; negative means none.
fn millis(props: &Properties, name: &str, default: i64) -> Result<Option<Duration>> {
    let v = props.get_int(name, default)?;
    Ok(if v < 0 { None } else { Some(Duration::from_millis(v as u64)) })
}

/// Ice 3.8's connection property `key` of one side: `<Adapter>.Connection.<key>` (an adapter's
/// own, `prefix` being its name) over `Ice.Connection.<Side>.<key>`; `None` when neither is set.
fn connection_property(props: &Properties, prefix: &str, side: &str, key: &str) -> Option<(String, String)> {
    let own = (!prefix.is_empty()).then(|| format!("{prefix}.Connection.{key}"));
    own.into_iter().chain([format!("Ice.Connection.{side}.{key}")]).find_map(|name| {
        let value = props.get(&name).filter(|v| !v.trim().is_empty())?;
        Some((name, value))
    })
}

/// An Ice 3.8 connection property in seconds (or a count), with `default` when unset.
fn connection_int(props: &Properties, prefix: &str, side: &str, key: &str, default: i64) -> Result<i64> {
    match connection_property(props, prefix, side, key) {
        None => Ok(default),
        Some((name, value)) => {
            value.trim().parse().map_err(|_| Error::Property { name, reason: format!("{value:?} is not an integer") })
        }
    }
}

/// The Ice 3.8 connection settings floe reads (`Ice.Connection.<Side>.<key>` and
/// `<Adapter>.Connection.<key>`).
const CONNECTION_KEYS: [&str; 6] =
    ["IdleTimeout", "EnableIdleCheck", "InactivityTimeout", "ConnectTimeout", "CloseTimeout", "MaxDispatches"];

/// The heartbeat and idle settings of one side, and its inactivity timeout.
///
/// Ice 3.8's model is the default: a heartbeat whenever nothing was written for a while, an
/// idle check that aborts a connection that heard nothing for the idle timeout (60 s), and a
/// graceful close of a connection without calls for the inactivity timeout (300 s). Ice 3.7's
/// ACM model applies instead when an `Ice.ACM.*` (or `<Adapter>.ACM.*`) property is set for
/// the side and no Ice 3.8 connection property is.
fn acm(props: &Properties, prefix: &str, side: &str, default_close: i64) -> Result<(AcmConfig, Option<Duration>)> {
    let acm_names = |key: &str| {
        let mut names = vec![format!("Ice.ACM.{key}"), format!("Ice.ACM.{side}.{key}")];
        if !prefix.is_empty() {
            names.push(format!("{prefix}.ACM.{key}"));
        }
        names
    };
    let acm_set = ["Timeout", "Heartbeat", "Close"].iter().flat_map(|k| acm_names(k)).any(|n| props.get(&n).is_some());
    // `Ice.Connection.IdleTimeout` and `Ice.Connection.EnableIdleCheck`: floe's earlier names
    // of the idle timeout, for both sides (Ice 3.8 has no such properties).
    let legacy_idle = props.get("Ice.Connection.IdleTimeout");
    let modern_set = CONNECTION_KEYS.iter().any(|k| connection_property(props, prefix, side, k).is_some());
    if acm_set && !modern_set && legacy_idle.is_none() {
        // `<Adapter>.ACM.X` overrides `Ice.ACM.<Side>.X`, which overrides `Ice.ACM.X`.
        let get = |key: &str, default: i64| -> Result<i64> {
            let general = props.get_int(&format!("Ice.ACM.{key}"), default)?;
            let side = props.get_int(&format!("Ice.ACM.{side}.{key}"), general)?;
            if prefix.is_empty() {
                Ok(side)
            } else {
                props.get_int(&format!("{prefix}.ACM.{key}"), side)
            }
        };
        let acm = AcmConfig::from_ints(get("Timeout", 60)?, get("Heartbeat", 1)?, get("Close", default_close)?);
        return Ok((acm, None));
    }
    let legacy_secs = match legacy_idle {
        None => 60,
        Some(idle) => idle.trim().parse().map_err(|_| Error::Property {
            name: "Ice.Connection.IdleTimeout".into(),
            reason: format!("{idle:?} is not an integer"),
        })?,
    };
    let idle = connection_int(props, prefix, side, "IdleTimeout", legacy_secs)?;
    let legacy_check = props.get_bool("Ice.Connection.EnableIdleCheck", true)?;
    let check = connection_int(props, prefix, side, "EnableIdleCheck", i64::from(legacy_check))? > 0;
    let inactivity = connection_int(props, prefix, side, "InactivityTimeout", 300)?;
    let acm = AcmConfig::idle_timeout(Duration::from_secs(idle.max(0) as u64), check);
    let inactivity = (inactivity > 0).then(|| Duration::from_secs(inactivity as u64));
    Ok((acm, inactivity))
}

/// The settings of the connections of one side: `prefix` is an adapter's name (its
/// `<Adapter>.X` properties override the general ones) or "" for clients; `side` is `Client`
/// or `Server` (`Ice.ACM.<Side>.X`).
pub(crate) fn connection_config(
    props: &Properties,
    prefix: &str,
    side: &str,
    default_close: i64,
) -> Result<ConnectionConfig> {
    let kb = props.get_int("Ice.MessageSizeMax", 1024)?;
    let kb = props.get_int(&format!("{prefix}.MessageSizeMax"), kb)?;
    let max_message_size =
        if kb <= 0 { i32::MAX as usize } else { (kb as usize).saturating_mul(1024).min(i32::MAX as usize) };
    let (acm, inactivity_timeout) = acm(props, prefix, side, default_close)?;
    let close_timeout = match connection_property(props, prefix, side, "CloseTimeout") {
        Some(_) => Duration::from_secs(connection_int(props, prefix, side, "CloseTimeout", 10)?.max(0) as u64),
        None => millis(props, "Ice.Override.CloseTimeout", 10_000)?.unwrap_or(Duration::from_secs(10)),
    };
    Ok(ConnectionConfig {
        max_message_size,
        compression_level: props.get_int("Ice.Compression.Level", 1)?.clamp(1, 9) as u32,
        acm,
        max_dispatches: {
            // Ice.ThreadPool.Server.Serialize=1 serializes the dispatches of each connection.
            let serialize = side == "Server" && props.get_bool("Ice.ThreadPool.Server.Serialize", false)?;
            // A safe default: one connection cannot pile up more than 1000 waiting dispatches.
            let general = props.get_int("Floe.MaxDispatchesPerConnection", if serialize { 1 } else { 1000 })?;
            // Ice 3.8's names, then floe's adapter property.
            let general = connection_int(props, "", side, "MaxDispatches", general)?;
            let general = props.get_int(&format!("{prefix}.MaxDispatches"), general)?;
            connection_int(props, prefix, side, "MaxDispatches", general)?.max(0) as usize
        },
        close_timeout,
        inactivity_timeout,
        accept_timeout: match connection_int(props, prefix, side, "ConnectTimeout", 10)? {
            secs if secs > 0 => Duration::from_secs(secs as u64),
            _ => Duration::from_secs(u64::from(u32::MAX)),
        },
        trace_protocol: props.get_int("Ice.Trace.Protocol", 0)? > 0,
        trace_network: props.get_int("Ice.Trace.Network", 0)? > 0,
        partial_message_timeout: match props.get_int("Floe.Connection.PartialMessageTimeout", 30)? {
            t if t <= 0 => None,
            t => Some(Duration::from_secs(t as u64)),
        },
        ..ConnectionConfig::default()
    })
}

/// The connect timeout of outgoing connections: Ice 3.8's `Ice.Connection.Client.ConnectTimeout`
/// (seconds; 0 or less: none) when set, else Ice 3.7's `Ice.Override.ConnectTimeout` or
/// `Ice.Override.Timeout` (milliseconds); `None` leaves it to each endpoint's `-t`.
pub(crate) fn client_connect_timeout(properties: &Properties) -> Result<Option<Duration>> {
    Ok(match connection_property(properties, "", "Client", "ConnectTimeout") {
        Some(_) => match connection_int(properties, "", "Client", "ConnectTimeout", 10)? {
            secs if secs > 0 => Some(Duration::from_secs(secs as u64)),
            _ => None,
        },
        None => millis(
            properties,
            "Ice.Override.ConnectTimeout",
            millis(properties, "Ice.Override.Timeout", -1)?.map(|d| d.as_millis() as i64).unwrap_or(-1),
        )?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connection::{AcmClose, AcmHeartbeat};

    fn props(pairs: &[(&str, &str)]) -> Properties {
        let p = Properties::new();
        for (k, v) in pairs {
            p.set(k, v);
        }
        p
    }

    fn client(pairs: &[(&str, &str)]) -> ConnectionConfig {
        connection_config(&props(pairs), "", "Client", 3).unwrap()
    }

    fn server(adapter: &str, pairs: &[(&str, &str)]) -> ConnectionConfig {
        connection_config(&props(pairs), adapter, "Server", 2).unwrap()
    }

    #[test]
    fn the_defaults_are_ice_38s() {
        for c in [client(&[]), server("A", &[])] {
            assert_eq!(c.acm, AcmConfig::idle_timeout(Duration::from_secs(60), true));
            assert_eq!(c.acm.heartbeat, AcmHeartbeat::OnIdle);
            assert_eq!(c.acm.close, AcmClose::OnIdleForceful);
            assert_eq!(c.inactivity_timeout, Some(Duration::from_secs(300)));
            assert_eq!(c.close_timeout, Duration::from_secs(10));
            assert_eq!(c.accept_timeout, Duration::from_secs(10));
            assert_eq!(c.max_dispatches, 1000);
        }
        assert_eq!(client_connect_timeout(&props(&[])).unwrap(), None);
    }

    #[test]
    fn acm_properties_alone_select_ice_37s_model() {
        let c = client(&[("Ice.ACM.Timeout", "10")]);
        assert_eq!(c.acm, AcmConfig::from_ints(10, 1, 3));
        assert_eq!(c.inactivity_timeout, None);
        let s = server("A", &[("A.ACM.Heartbeat", "3")]);
        assert_eq!(s.acm, AcmConfig::from_ints(60, 3, 2));
        // An ACM property of the other side does not count.
        assert_eq!(
            client(&[("Ice.ACM.Server.Timeout", "10")]).acm,
            AcmConfig::idle_timeout(Duration::from_secs(60), true)
        );
        // With an Ice 3.8 property beside it, Ice 3.8's model wins.
        let both = client(&[("Ice.ACM.Timeout", "10"), ("Ice.Connection.Client.IdleTimeout", "20")]);
        assert_eq!(both.acm, AcmConfig::idle_timeout(Duration::from_secs(20), true));
    }

    #[test]
    fn an_adapters_own_setting_beats_its_sides_which_beats_none() {
        let pairs = [("Ice.Connection.Server.IdleTimeout", "5"), ("A.Connection.IdleTimeout", "7")];
        assert_eq!(server("A", &pairs).acm.timeout, Duration::from_secs(7));
        assert_eq!(server("B", &pairs).acm.timeout, Duration::from_secs(5));
        assert_eq!(client(&pairs).acm.timeout, Duration::from_secs(60));
        // floe's earlier name sets both sides, below Ice 3.8's names.
        let legacy = [("Ice.Connection.IdleTimeout", "4"), ("Ice.Connection.EnableIdleCheck", "0")];
        assert_eq!(client(&legacy).acm, AcmConfig::idle_timeout(Duration::from_secs(4), false));
        assert_eq!(server("A", &legacy).acm.timeout, Duration::from_secs(4));
    }

    #[test]
    fn idle_check_inactivity_close_and_connect_timeouts() {
        let c = client(&[
            ("Ice.Connection.Client.EnableIdleCheck", "0"),
            ("Ice.Connection.Client.InactivityTimeout", "0"),
            ("Ice.Connection.Client.CloseTimeout", "3"),
        ]);
        assert_eq!(c.acm.close, AcmClose::Off);
        assert_eq!(c.acm.heartbeat, AcmHeartbeat::OnIdle);
        assert_eq!(c.inactivity_timeout, None);
        assert_eq!(c.close_timeout, Duration::from_secs(3));
        assert_eq!(client(&[("Ice.Override.CloseTimeout", "500")]).close_timeout, Duration::from_millis(500));
        assert!(!client(&[("Ice.Connection.Client.IdleTimeout", "0")]).acm.is_enabled());
        let s = server("A", &[("A.Connection.ConnectTimeout", "2")]);
        assert_eq!(s.accept_timeout, Duration::from_secs(2));
        let connect = |pairs: &[(&str, &str)]| client_connect_timeout(&props(pairs)).unwrap();
        assert_eq!(connect(&[("Ice.Connection.Client.ConnectTimeout", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(connect(&[("Ice.Override.ConnectTimeout", "250")]), Some(Duration::from_millis(250)));
    }

    #[test]
    fn max_dispatches_by_every_name() {
        assert_eq!(server("A", &[("Floe.MaxDispatchesPerConnection", "7")]).max_dispatches, 7);
        assert_eq!(server("A", &[("Ice.Connection.Server.MaxDispatches", "5")]).max_dispatches, 5);
        assert_eq!(client(&[("Ice.Connection.Client.MaxDispatches", "4")]).max_dispatches, 4);
        let pairs = [("Ice.Connection.Server.MaxDispatches", "5"), ("A.Connection.MaxDispatches", "2")];
        assert_eq!(server("A", &pairs).max_dispatches, 2);
        assert_eq!(server("A", &[("A.MaxDispatches", "3")]).max_dispatches, 3);
        assert_eq!(server("A", &[("Ice.ThreadPool.Server.Serialize", "1")]).max_dispatches, 1);
    }

    #[test]
    fn a_bad_value_names_its_property() {
        let err = connection_config(&props(&[("A.Connection.IdleTimeout", "soon")]), "A", "Server", 2).unwrap_err();
        assert!(matches!(&err, Error::Property { name, .. } if name == "A.Connection.IdleTimeout"), "{err:?}");
    }
}
