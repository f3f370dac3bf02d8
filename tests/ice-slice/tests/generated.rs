//! Spot checks of the code generated from Ice's own Slice files.

use floe::encoding::{Decode, Decoder, Encode, Encoder, EncodingVersion};
use floe_ice_slice::*;

#[test]
fn every_ice_slice_file_was_compiled() {
    assert!(FILES.lines().count() >= 60, "{FILES}");
    assert!(
        FILES.contains("IceGrid/Admin.ice")
            && FILES.contains("IceStorm/IceStorm.ice")
            && FILES.contains("Ice/Locator.ice")
    );
}

#[test]
fn generated_types_work() {
    // Ice::ProtocolVersion and an IceStorm link record round-trip.
    let v = ice::ProtocolVersion { major: 1, minor: 0 };
    let mut e = Encoder::new(EncodingVersion::V1_1);
    v.encode(&mut e);
    assert_eq!(e.as_slice(), &[1, 0]);
    let back = ice::ProtocolVersion::decode(&mut Decoder::from_slice(e.as_slice(), EncodingVersion::V1_1)).unwrap();
    assert_eq!(back, v);
    // Proxies and servant traits exist for the services floe will implement.
    fn _locator(p: &ice::LocatorPrx) -> &floe::ObjectPrx {
        floe::Proxy::as_object(p)
    }
    fn _topic_manager(p: &ice_storm::TopicManagerPrx) -> &floe::ObjectPrx {
        floe::Proxy::as_object(p)
    }
    assert_eq!(<ice::LocatorPrx as floe::Proxy>::TYPE_ID, "::Ice::Locator");
    assert_eq!(ice_grid::ServerState::MAX_VALUE, 6);
}

#[test]
fn icegrid_descriptor_classes_round_trip() {
    // IceGrid's descriptors are classes with inheritance: a ServerDescriptor is a
    // CommunicatorDescriptor, sent by value.
    let mut server = ice_grid::ServerDescriptor { id: "srv".into(), exe: "/bin/true".into(), ..Default::default() };
    server.base.description = "a server".into();
    let server = floe::Class::new(server);
    for encoding in [EncodingVersion::V1_1, EncodingVersion::V1_0] {
        let mut e = Encoder::new(encoding);
        e.write_class(Some(&server));
        e.write_pending_values();
        let mut d = Decoder::from_slice(e.as_slice(), encoding);
        let back = d.read_class::<ice_grid::CommunicatorDescriptor>().unwrap().unwrap();
        d.read_pending_values().unwrap();
        assert_eq!(back.ice_id(), "::IceGrid::ServerDescriptor");
        assert_eq!(back.read().description, "a server");
        let as_server = back.downcast::<ice_grid::ServerDescriptor>().unwrap();
        assert_eq!((as_server.read().id.as_str(), as_server.read().exe.as_str()), ("srv", "/bin/true"));
    }
}
