//! Server for Ice 3.8's `Ice/location` suite, generated from 3.8's Test.ice: the 3.7 server
//! (a locator, a locator registry and a `ServerManager` that starts "servers" registering
//! their adapters), whose registry also counts the `set…` requests it gets, for 3.8's
//! `getSetRequestCount`.

#[cfg(floe_ice38)]
mod server {

    use std::collections::HashMap;
    use std::sync::atomic::{AtomicI32, Ordering};
    use std::sync::{Arc, Mutex};

    use floe::{Communicator, Current, Error, Identity, ObjectAdapter, ObjectPrx, Properties, Proxy};
    use floe_conformance::generated38::location::ice::{self, AdapterNotFoundException, ObjectNotFoundException};
    use floe_conformance::generated38::location::test::*;
    use floe_conformance::TestServer;

    type R<T> = floe::Result<T>;

    #[derive(Default)]
    struct Registry {
        adapters: Mutex<HashMap<floe::CompactString, ObjectPrx>>,
        objects: Mutex<HashMap<Identity, ObjectPrx>>,
        /// How many `set…` requests the registry got (`getSetRequestCount`).
        set_requests: AtomicI32,
    }

    impl Registry {
        fn add_object(&self, obj: ObjectPrx) {
            self.objects.lock().expect("objects").insert(obj.ice_get_identity().clone(), obj);
        }
    }

    struct RegistryI(Arc<Registry>);

    impl ice::LocatorRegistry for RegistryI {
        async fn set_adapter_direct_proxy(
            &self,
            id: floe::CompactString,
            proxy: Option<ObjectPrx>,
            _: &Current,
        ) -> R<()> {
            self.0.set_requests.fetch_add(1, Ordering::SeqCst);
            let mut adapters = self.0.adapters.lock().expect("adapters");
            match proxy {
                Some(p) => adapters.insert(id, p),
                None => adapters.remove(&id),
            };
            Ok(())
        }
        async fn set_replicated_adapter_direct_proxy(
            &self,
            adapter_id: floe::CompactString,
            replica_group_id: floe::CompactString,
            p: Option<ObjectPrx>,
            _: &Current,
        ) -> R<()> {
            self.0.set_requests.fetch_add(1, Ordering::SeqCst);
            let mut adapters = self.0.adapters.lock().expect("adapters");
            match p {
                Some(p) => {
                    adapters.insert(adapter_id.clone(), p.clone());
                    adapters.insert(replica_group_id, p);
                }
                None => {
                    adapters.remove(&adapter_id);
                    adapters.remove(&replica_group_id);
                }
            }
            Ok(())
        }
        async fn set_server_process_proxy(
            &self,
            _id: floe::CompactString,
            _proxy: Option<ice::ProcessPrx>,
            _: &Current,
        ) -> R<()> {
            self.0.set_requests.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    impl TestLocatorRegistry for RegistryI {
        async fn add_object(&self, obj: Option<ObjectPrx>, _: &Current) -> R<()> {
            if let Some(obj) = obj {
                self.0.add_object(obj);
            }
            Ok(())
        }
        async fn get_set_request_count(&self, _: &Current) -> R<i32> {
            Ok(self.0.set_requests.load(Ordering::SeqCst))
        }
    }

    struct LocatorI {
        registry: Arc<Registry>,
        registry_prx: ice::LocatorRegistryPrx,
        requests: Mutex<i32>,
    }

    impl ice::Locator for LocatorI {
        async fn find_object_by_id(&self, id: Identity, _: &Current) -> R<Option<ObjectPrx>> {
            *self.requests.lock().expect("count") += 1;
            match self.registry.objects.lock().expect("objects").get(&id) {
                Some(p) => Ok(Some(p.clone())),
                None => Err(Error::user(ObjectNotFoundException {})),
            }
        }
        async fn find_adapter_by_id(&self, id: floe::CompactString, current: &Current) -> R<Option<ObjectPrx>> {
            *self.requests.lock().expect("count") += 1;
            // Ice's C++ client ("testing locator encoding resolution") resolves these two ids with
            // proxies of encoding 1.0, whose locator requests must be 1.0-encoded too; its test
            // locator answers them with TestAdapter's endpoints.
            let id = if id == "TestAdapter10" || id == "TestAdapter10-2" {
                if current.encoding != floe::encoding::EncodingVersion::V1_0 {
                    return Err(Error::UnknownException(format!(
                        "{id} was resolved with a locator request in encoding {}, not 1.0",
                        current.encoding
                    )));
                }
                floe::CompactString::from("TestAdapter")
            } else {
                id
            };
            match self.registry.adapters.lock().expect("adapters").get(&id) {
                Some(p) => Ok(Some(p.clone())),
                None => Err(Error::user(AdapterNotFoundException {})),
            }
        }
        async fn get_registry(&self, _: &Current) -> R<Option<ice::LocatorRegistryPrx>> {
            Ok(Some(self.registry_prx.clone()))
        }
    }

    impl TestLocator for LocatorI {
        async fn get_request_count(&self, _: &Current) -> R<i32> {
            Ok(*self.requests.lock().expect("count"))
        }
    }

    struct HelloI;

    impl Hello for HelloI {
        async fn say_hello(&self, _: &Current) -> R<()> {
            Ok(())
        }
    }

    struct TestI {
        adapter1: ObjectAdapter,
        adapter2: ObjectAdapter,
        registry: Arc<Registry>,
    }

    impl TestIntf for TestI {
        async fn shutdown(&self, _: &Current) -> R<()> {
            // Take this server's adapters out of the registry before answering (an Ice server's
            // shutdown unregisters them before it returns), so that a server started right after
            // registers after this one is gone; then nothing is left for the deactivation to do.
            {
                let mut adapters = self.registry.adapters.lock().expect("adapters");
                for adapter in [&self.adapter1, &self.adapter2] {
                    let endpoints = adapter.endpoints();
                    adapters.retain(|_, p| p.reference().wire.endpoints != endpoints);
                    adapter.set_locator(None);
                }
            }
            self.adapter1.communicator().shutdown();
            Ok(())
        }
        async fn get_hello(&self, _: &Current) -> R<Option<HelloPrx>> {
            Ok(Some(HelloPrx::from_object(self.adapter1.create_indirect_proxy(Identity::new("hello")))))
        }
        async fn get_replicated_hello(&self, _: &Current) -> R<Option<HelloPrx>> {
            Ok(Some(HelloPrx::from_object(self.adapter1.create_proxy(Identity::new("hello")))))
        }
        async fn migrate_hello(&self, _: &Current) -> R<()> {
            let id = Identity::new("hello");
            let (from, to) = if self.adapter1.has_servant(&id) {
                (&self.adapter1, &self.adapter2)
            } else {
                (&self.adapter2, &self.adapter1)
            };
            if let Some(servant) = from.remove(&id) {
                self.registry.add_object(to.add(servant, id));
            }
            Ok(())
        }
    }

    struct ServerManagerI {
        registry: Arc<Registry>,
        properties: Properties,
        servers: Mutex<Vec<Communicator>>,
        next_port: Mutex<i32>,
    }

    impl ServerManager for ServerManagerI {
        async fn start_server(&self, current: &Current) -> R<()> {
            // A "server": a communicator of its own with the test properties, whose adapters find
            // the locator through Ice.Default.Locator.
            let props = Properties::new();
            for (k, v) in self.properties.with_prefix("") {
                props.set(&k, &v);
            }
            props.set("TestAdapter.AdapterId", "TestAdapter");
            props.set("TestAdapter.ReplicaGroupId", "ReplicatedAdapter");
            props.set("TestAdapter2.AdapterId", "TestAdapter2");
            props.set("Ice.PrintAdapterReady", "0");
            let main = current.adapter().ok_or_else(|| Error::Adapter("no adapter".into()))?;
            let base = props.get_int("Test.BasePort", 12010)?;
            let host = props.get("Ice.Default.Host").unwrap_or_else(|| "127.0.0.1".into());
            props.set("Ice.Default.Locator", &format!("locator:tcp -h {host} -p {base}"));
            let (p1, p2) = {
                let mut next = self.next_port.lock().expect("port");
                *next += 2;
                (base + i64::from(*next) - 1, base + i64::from(*next))
            };
            let server = Communicator::with_properties(props)?;
            let adapter1 =
                server.create_object_adapter_with_endpoints("TestAdapter", &format!("tcp -h {host} -p {p1}"))?;
            let adapter2 =
                server.create_object_adapter_with_endpoints("TestAdapter2", &format!("tcp -h {host} -p {p2}"))?;
            let object = Arc::new(TestI {
                adapter1: adapter1.clone(),
                adapter2: adapter2.clone(),
                registry: self.registry.clone(),
            });
            self.registry.add_object(adapter1.add(HelloServer::new(HelloI), Identity::new("hello")));
            let servant = TestIntfServer(object);
            let servant: Arc<dyn floe::Dispatcher> = Arc::new(servant);
            self.registry.add_object(adapter1.add(servant.clone(), Identity::new("test")));
            self.registry.add_object(adapter1.add(servant.clone(), Identity::new("test2")));
            adapter1.add(servant, Identity::new("test3"));
            adapter1.activate().await?;
            adapter2.activate().await?;
            let _ = main;
            self.servers.lock().expect("servers").push(server);
            Ok(())
        }
        async fn shutdown(&self, current: &Current) -> R<()> {
            let servers: Vec<Communicator> = self.servers.lock().expect("servers").drain(..).collect();
            for s in servers {
                s.destroy().await;
            }
            floe_conformance::shutdown(current);
            Ok(())
        }
    }

    pub(crate) fn main() -> std::process::ExitCode {
        TestServer::main("location", &[], |server| async move {
            let adapter = server.adapter("ServerManager", 0)?;
            let registry = Arc::new(Registry::default());
            registry.add_object(adapter.create_proxy(Identity::new("ServerManager")));
            let manager = ServerManagerI {
                registry: registry.clone(),
                properties: server.communicator.properties().clone(),
                servers: Mutex::new(Vec::new()),
                next_port: Mutex::new(0),
            };
            adapter.add(ServerManagerServer::new(manager), Identity::new("ServerManager"));
            let registry_prx = ice::LocatorRegistryPrx::from_object(
                adapter.add(TestLocatorRegistryServer::new(RegistryI(registry.clone())), Identity::new("registry")),
            );
            let locator = LocatorI { registry, registry_prx, requests: Mutex::new(0) };
            adapter.add(TestLocatorServer::new(locator), Identity::new("locator"));
            adapter.activate().await
        })
    }
}

#[cfg(floe_ice38)]
fn main() -> std::process::ExitCode {
    server::main()
}

#[cfg(not(floe_ice38))]
fn main() -> std::process::ExitCode {
    floe_conformance::without_ice38("location38")
}
