// A ZeroC Ice 3.7 C++11 client that reaches the tester (tests/interop/Test.ice) through a
// Glacier2 router with Glacier2::SessionFactoryHelper and Glacier2::SessionHelper: it connects
// (createSession with a user id and password, or createSessionFromSecureConnection over ssl),
// gets its callback category, adds a callback servant, has the tester call it back, destroys
// the session and waits for the `disconnected` callback.
//
// Usage: glacier2-client --host H --port P [--protocol tcp|ssl] [--user U --password W]
//                        [--expect-session] --tester "tester:tcp -h 127.0.0.1 -p N"
//                        [--Ice.* / --IceSSL.* properties]
// Without --user, the session is created from the ssl connection. Prints one line per check
// and ends with "N passed, M failed"; exits 0 only when M is 0.
#include <Glacier2/Glacier2.h>
#include <Ice/Ice.h>
#include <Test.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <iostream>
#include <mutex>
#include <stdexcept>
#include <string>

using namespace std;
using namespace Interop;

static int passed = 0, failed = 0;

static void check(const string& name, const function<void()>& f)
{
    try
    {
        f();
        ++passed;
        cout << "ok   " << name << endl;
    }
    catch(const exception& e)
    {
        ++failed;
        cout << "FAIL " << name << ": " << e.what() << endl;
    }
}

static void require(bool ok, const string& what)
{
    if(!ok)
    {
        throw runtime_error(what);
    }
}

// What the session helper reported, for the main thread to wait on.
class Events : public Glacier2::SessionCallback
{
public:

    void createdCommunicator(const Glacier2::SessionHelperPtr&) override
    {
    }

    void connected(const Glacier2::SessionHelperPtr&) override
    {
        lock_guard<mutex> lock(_mutex);
        _connected = true;
        _cond.notify_all();
    }

    void disconnected(const Glacier2::SessionHelperPtr&) override
    {
        lock_guard<mutex> lock(_mutex);
        _disconnected = true;
        _cond.notify_all();
    }

    void connectFailed(const Glacier2::SessionHelperPtr&, const Ice::Exception& ex) override
    {
        lock_guard<mutex> lock(_mutex);
        _failure = ex.ice_id();
        try
        {
            ex.ice_throw();
        }
        catch(const Glacier2::PermissionDeniedException& e)
        {
            _failure += ": " + e.reason;
        }
        catch(const Glacier2::CannotCreateSessionException& e)
        {
            _failure += ": " + e.reason;
        }
        catch(...)
        {
        }
        _cond.notify_all();
    }

    // Waits up to 20 s for `connected` (true) or `connectFailed` (false, with the reason).
    bool waitConnected(string& failure)
    {
        unique_lock<mutex> lock(_mutex);
        _cond.wait_for(lock, chrono::seconds(20), [this] { return _connected || !_failure.empty(); });
        failure = _failure.empty() && !_connected ? "no callback within 20 s" : _failure;
        return _connected;
    }

    // Waits up to 20 s for `disconnected`.
    bool waitDisconnected()
    {
        unique_lock<mutex> lock(_mutex);
        return _cond.wait_for(lock, chrono::seconds(20), [this] { return _disconnected; });
    }

private:

    mutex _mutex;
    condition_variable _cond;
    bool _connected = false;
    bool _disconnected = false;
    string _failure;
};

class CallbackEcho : public Echo
{
public:

    string echoString(string s, const Ice::Current& current) override
    {
        lock_guard<mutex> lock(_mutex);
        ++calls;
        category = current.id.category;
        return "callback " + s;
    }

    int calls = 0;
    string category;

private:

    mutex _mutex;
};

int main(int argc, char* argv[])
{
    string host = "127.0.0.1", protocol = "tcp", user, password, testerProxy;
    int port = 0;
    bool expectSession = false;
    Ice::StringSeq rest;
    for(int i = 1; i < argc; ++i)
    {
        string a = argv[i];
        auto value = [&]() -> string
        {
            if(i + 1 >= argc)
            {
                cerr << "missing value for " << a << endl;
                exit(2);
            }
            return argv[++i];
        };
        if(a == "--host") host = value();
        else if(a == "--port") port = stoi(value());
        else if(a == "--protocol") protocol = value();
        else if(a == "--user") user = value();
        else if(a == "--password") password = value();
        else if(a == "--tester") testerProxy = value();
        else if(a == "--expect-session") expectSession = true;
        else rest.push_back(a);
    }
    if(port == 0 || testerProxy.empty())
    {
        cerr << "usage: glacier2-client --host H --port P --tester PROXY [--protocol ssl] [--user U --password W]"
             << endl;
        return 2;
    }

    Ice::InitializationData initData;
    initData.properties = Ice::createProperties();
    initData.properties->setProperty("Ice.Warn.Connections", "0");
    initData.properties->parseCommandLineOptions("", rest);
    auto events = make_shared<Events>();
    auto factory = make_shared<Glacier2::SessionFactoryHelper>(initData, events);
    factory->setRouterHost(host);
    factory->setPort(port);
    factory->setProtocol(protocol);
    factory->setUseCallbacks(true);

    Glacier2::SessionHelperPtr session = user.empty() ? factory->connect() : factory->connect(user, password);
    string failure;
    bool connected = events->waitConnected(failure);
    check(user.empty() ? "connect (createSessionFromSecureConnection)" : "connect (createSession)",
          [&] { require(connected, "connectFailed: " + failure); });
    if(!connected)
    {
        session->destroy();
        factory->destroy();
        cout << passed << " passed, " << failed << " failed" << endl;
        return 1;
    }

    check("session proxy", [&] {
        require(session->isConnected(), "not connected");
        require((session->session() != nullptr) == expectSession,
                expectSession ? "no session proxy from the session manager" : "an unexpected session proxy");
    });

    string category;
    check("categoryForClient", [&] {
        category = session->categoryForClient();
        require(!category.empty(), "empty category");
    });

    auto echo = make_shared<CallbackEcho>();
    shared_ptr<EchoPrx> echoPrx;
    check("addWithUUID", [&] {
        echoPrx = Ice::uncheckedCast<EchoPrx>(session->addWithUUID(echo));
        require(echoPrx->ice_getIdentity().category == category, "callback identity not in the category");
    });

    auto tester = Ice::uncheckedCast<TesterPrx>(session->communicator()->stringToProxy(testerProxy));
    check("routed twoway", [&] {
        tester->ping();
        string reversed;
        require(tester->opString("through ", "the router", reversed) == "through the router", "opString");
    });
    check("callback through the router", [&] {
        require(tester->callEcho(echoPrx, "hello") == "callback hello", "callEcho result");
        require(echo->calls == 1 && echo->category == category, "the callback servant was not called");
    });

    check("destroy and disconnected", [&] {
        session->destroy();
        require(events->waitDisconnected(), "no disconnected callback within 20 s");
        require(!session->isConnected(), "still connected");
    });

    factory->destroy();
    cout << passed << " passed, " << failed << " failed" << endl;
    return failed == 0 ? 0 : 1;
}
