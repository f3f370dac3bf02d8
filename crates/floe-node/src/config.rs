//! The node's configuration, read from the same properties as IceGrid's node.

use std::path::PathBuf;

use floe::{Error, Properties};
use floe_service::props::{non_empty, property_error};

/// What `floe-node` was configured with.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// `IceGrid.Node.Name` (required): the node name that descriptors refer to.
    pub name: String,
    /// `IceGrid.Node.Endpoints` (required): where the registry reaches the node's objects.
    pub endpoints: String,
    /// `IceGrid.Node.Data` (required, an existing directory): servers' configuration files and
    /// data directories go under `<Data>/servers/<server id>/`.
    pub data_dir: PathBuf,
    /// `IceGrid.Node.Output`: a directory for the servers' standard output and error
    /// (`<id>.out`, `<id>.err`); unset, they inherit the node's.
    pub output_dir: Option<PathBuf>,
    /// `IceGrid.Node.RedirectErrToOut`: standard error goes to `<id>.out` too.
    pub redirect_err_to_out: bool,
    /// `IceGrid.Node.WaitTime` (s, default 60): the activation and deactivation timeouts of
    /// servers whose descriptors set none.
    pub wait_time: u64,
    /// `IceGrid.Node.PrintServersReady`: once the servers loaded at start-up with activation
    /// `always` are active, print `<value> ready`.
    pub print_servers_ready: Option<String>,
    /// `IceGrid.Node.AllowRunningServersAsRoot`: a node run as root may run servers whose
    /// `user` is root (servers without a `user` run as `nobody` either way, as with IceGrid).
    pub allow_running_servers_as_root: bool,
    /// `IceGrid.Node.PropertiesOverride`: `Name=Value` pairs (white-space separated) added to
    /// every server's configuration.
    pub properties_override: Vec<(String, String)>,
    /// `IceGrid.Node.AllowEndpointsOverride`: an active server's adapter may register new
    /// endpoints.
    pub allow_endpoints_override: bool,
    /// `IceGrid.InstanceName`, else the category of `Ice.Default.Locator`'s identity, else
    /// `IceGrid`.
    pub instance_name: String,
    /// `Ice.Default.Locator`, as given: servers get it unless their descriptor sets one.
    pub locator: Option<String>,
    /// `IceGrid.Node.CollocateRegistry`: run a registry in the node.
    pub collocate_registry: bool,
}

impl NodeConfig {
    /// Reads the configuration; an error names the property that is missing or wrong.
    pub fn from_properties(props: &Properties) -> Result<NodeConfig, Error> {
        let required = |name: &str| {
            non_empty(props, name).ok_or_else(|| property_error(name, format!("property `{name}' is not set")))
        };
        let name = required("IceGrid.Node.Name")?;
        let endpoints = required("IceGrid.Node.Endpoints")?;
        let data_dir = PathBuf::from(required("IceGrid.Node.Data")?);
        if !data_dir.is_dir() {
            return Err(property_error(
                "IceGrid.Node.Data",
                format!("property `IceGrid.Node.Data' is set to an invalid path: {}", data_dir.display()),
            ));
        }
        let flag = |name: &str| props.get_int(name, 0).map(|v| v > 0);
        let wait_time = props.get_int("IceGrid.Node.WaitTime", 60)?;
        if wait_time <= 0 {
            return Err(property_error("IceGrid.Node.WaitTime", "must be a positive number of seconds"));
        }
        let mut properties_override = Vec::new();
        for pair in props.get("IceGrid.Node.PropertiesOverride").unwrap_or_default().split_whitespace() {
            let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
            properties_override.push((n.to_string(), v.to_string()));
        }
        let locator = non_empty(props, "Ice.Default.Locator");
        let instance_name = non_empty(props, "IceGrid.InstanceName")
            .or_else(|| {
                let l = locator.as_deref()?;
                let identity = l.trim_start().split([':', ' ', '@']).next()?;
                identity.split_once('/').map(|(c, _)| c.trim_matches('"').to_string()).filter(|c| !c.is_empty())
            })
            .unwrap_or_else(|| "IceGrid".to_string());
        Ok(NodeConfig {
            name,
            endpoints,
            data_dir,
            output_dir: non_empty(props, "IceGrid.Node.Output").map(PathBuf::from),
            redirect_err_to_out: flag("IceGrid.Node.RedirectErrToOut")?,
            wait_time: wait_time as u64,
            print_servers_ready: non_empty(props, "IceGrid.Node.PrintServersReady"),
            allow_running_servers_as_root: flag("IceGrid.Node.AllowRunningServersAsRoot")?,
            properties_override,
            allow_endpoints_override: flag("IceGrid.Node.AllowEndpointsOverride")?,
            instance_name,
            locator,
            collocate_registry: flag("IceGrid.Node.CollocateRegistry")?,
        })
    }

    /// `<Data>/servers/<id>`.
    pub fn server_dir(&self, id: &str) -> PathBuf {
        self.data_dir.join("servers").join(id)
    }
}
